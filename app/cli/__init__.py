"""The ``debate`` subcommands: one module each, with ``register(subparsers)`` and ``main(args) -> exit code``.

A command module imports only light modules at its top, so building the
parser (``debate --help``) stays instant; its ``main`` imports what needs
LangGraph (or asyncio, procrastinate), each such import marked ``# start-up:``,
or one module that does the work (``fork`` hands it to ``forker``).
"""

COMMANDS = (
    "run",
    "resume",
    "fork",
    "show",
    "report",
    "eval",
    "probe",
    "list",
    "submit",
    "worker",
    "jobs",
    "compare",
    "serve",
)
"""Module names under ``debate_engine.app.cli``, in ``--help`` order."""
