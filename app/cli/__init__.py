"""The ``debate`` subcommands: one module each, with ``register(subparsers)`` and ``main(args) -> exit code``.

A command module imports only ``argparse`` at its top, so building the
parser (``debate --help``) stays instant; its ``main`` imports what it needs.
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
)
"""Module names under ``debate_engine.app.cli``, in ``--help`` order."""
