"""The ``debate`` command line: run, list, show, report and resume debates.

Exit codes: 0 done, 2 bad input or config, 3 provider failure, 4 summarizing
failed with ``abortOnFailure``, 130 interrupted (SIGINT), 143 terminated
(SIGTERM). Every step is checkpointed, so a stopped, failed or killed run
keeps its finished turns and continues with ``debate resume``.

Heavy modules (LangGraph, LangChain) are imported inside the commands, so
``debate --help`` and ``debate --version`` start at once.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from debate_engine import __version__

EXIT_OK, EXIT_INPUT, EXIT_PROVIDER, EXIT_SUMMARY, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 2, 3, 4, 130, 143


class UserError(Exception):
    """A mistake in the command line's input; exits 2 with its message."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="debate", description="Multi-agent debates on LangGraph.")
    parser.add_argument("--version", action="version", version=f"debate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a new debate")
    run.add_argument("problem", nargs="?", help="the problem to debate")
    run.add_argument("--problem-file", help="read the problem from this file")
    run.add_argument("--config", help="JSON config file (the seed schema)")
    run.add_argument("--agents", help="comma-separated roles, or ids/roles of the config's agents")
    run.add_argument("--rounds", type=int, help="number of rounds (1 to 10,000)")
    run.add_argument("--model", help="model for every agent and the judge (openai:..., openrouter:..., "
                     "local:smollm2, fake)")
    run.add_argument("--clarify", action="store_true", help="let agents ask clarifying questions first")
    run.add_argument("--thread-id", help="id to store the debate under (default: a new one)")
    run.add_argument("--max-output-tokens", type=int, help="tokens reserved for each answer")
    run.add_argument("--context-window", type=int, help="context window in tokens")
    run.add_argument("--max-concurrency", type=int, help="most calls at once per provider (default: no limit)")
    run.add_argument("--summary-method", choices=["rolling", "fresh"], help="summary strategy")
    run.add_argument("--no-summary", action="store_true", help="never summarize")

    show = sub.add_parser("show", help="show a stored debate")
    show.add_argument("thread")
    report = sub.add_parser("report", help="write the Markdown report of a stored debate")
    report.add_argument("thread")
    resume = sub.add_parser("resume", help="continue an interrupted, failed or killed debate")
    resume.add_argument("thread")
    lst = sub.add_parser("list", help="list stored debates")

    for p in (run, show, resume, report):
        p.add_argument("--output", help="write the final state as JSON here")
        p.add_argument("--report", help="write a Markdown report here")
    for p in (run, show, resume, lst, report):
        p.add_argument("--db", default=None, help="checkpoint database: a path or postgresql://... "
                       "(default $DEBATE_DB, else ~/.local/share/debate/debates.sqlite)")
    for p in (run, resume):
        p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``debate`` console script."""
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    args = _parser().parse_args(argv)
    from debate_engine.app import commands

    try:
        return int(commands.COMMANDS[args.command](args))
    except Exception as exc:  # every failure becomes a named message and an exit code
        return _failure(exc, args)


def _failure(exc: BaseException, args: argparse.Namespace) -> int:
    from debate_engine.app.runner import Stopped
    from debate_engine.nodes.summarize import SummarizationAborted
    from debate_engine.providers.errors import is_provider_error
    from debate_engine.providers.local_server import LocalModelError
    from debate_engine.providers.secrets import redact

    if _is_input_error(exc):
        problems = getattr(exc, "problems", None) or [str(exc)]
        text = "\n  ".join(["invalid input:", *problems] if len(problems) > 1 else problems)
        print(redact(f"error: {text}"), file=sys.stderr)
        return EXIT_INPUT
    if isinstance(exc, Stopped):
        code, message = (EXIT_INTERRUPTED, "interrupted") if exc.signum == 2 else (EXIT_TERMINATED, "terminated")
    elif isinstance(exc, SummarizationAborted):
        code, message = EXIT_SUMMARY, str(exc)
    elif isinstance(exc, LocalModelError):
        code, message = EXIT_PROVIDER, f"the embedded model failed: {exc}"
    elif is_provider_error(exc):
        code, message = EXIT_PROVIDER, f"the model provider failed: {exc}"
    else:
        raise exc
    print(redact(f"error: {message}{_resume_hint(args)}"), file=sys.stderr)
    return code


def _is_input_error(exc: BaseException) -> bool:
    from debate_engine.app.persistence import StorageError
    from debate_engine.graph.config import ConfigError
    from debate_engine.memory.budget import BudgetError
    from debate_engine.providers.factory import ModelConfigError

    return isinstance(exc, UserError | ConfigError | ModelConfigError | StorageError | BudgetError)


def _resume_hint(args: argparse.Namespace) -> str:
    thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
    if not thread:
        return ""
    db = f" --db {args.db}" if getattr(args, "db", None) else ""
    return f"\nEvery finished turn is saved; continue with: debate resume {thread}{db}"


def entry() -> Any:
    """``python -m debate_engine.app.cli``."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
