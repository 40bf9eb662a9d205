"""The ``debate`` command line: run, list, show, report and resume debates.

Exit codes: 0 done, 2 bad input or config, 3 provider failure, 4 summarizing
failed with ``abortOnFailure``, 5 the database failed during the run, 130
interrupted (SIGINT), 143 terminated (SIGTERM). Every step is checkpointed, so
a stopped, failed or killed run keeps its finished turns and continues with
``debate resume``. Nothing printed or logged shows a secret or a password.

Heavy modules (LangGraph, LangChain) are imported inside the commands, so
``debate --help`` and ``debate --version`` start at once.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import sys
from importlib import import_module
from typing import Any

from debate_engine import __version__
from debate_engine.app.commands import COMMANDS
from debate_engine.app.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_PROVIDER,
    EXIT_STORAGE,
    EXIT_SUMMARY,
    EXIT_TERMINATED,
    UserError,
)
from debate_engine.providers.secrets import redact_logs

STORAGE_HINT = "The turns saved before the failure are kept; when the database works again,"
"""What a storage failure leaves: not the turn whose write failed, which the resume makes again."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="debate", description="Multi-agent debates on LangGraph.")
    parser.add_argument("--version", action="version", version=f"debate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        import_module(f"debate_engine.app.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``debate`` console script."""
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    redact_logs()
    args = _parser().parse_args(argv)
    try:
        return int(import_module(f"debate_engine.app.commands.{args.command}").main(args))
    except BrokenPipeError:  # stdout closed early (`debate list | head`): the debate itself is saved
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # every failure becomes a named message and an exit code
        return _failure(exc, args)


def _failure(exc: BaseException, args: argparse.Namespace) -> int:
    from debate_engine.app.persistence import StorageFailure
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
    hint = "Every finished turn is saved;"
    if isinstance(exc, Stopped):
        code, message = (EXIT_INTERRUPTED, "interrupted") if exc.signum == 2 else (EXIT_TERMINATED, "terminated")
    elif isinstance(exc, StorageFailure):
        code, message, hint = EXIT_STORAGE, str(exc), STORAGE_HINT
    elif isinstance(exc, SummarizationAborted):
        code, message = EXIT_SUMMARY, str(exc)
    elif isinstance(exc, LocalModelError):
        code, message = EXIT_PROVIDER, f"the embedded model failed: {exc}"
    elif is_provider_error(exc):
        code, message = EXIT_PROVIDER, f"the model provider failed: {exc}"
    else:
        raise exc
    print(redact(f"error: {message}{_resume_hint(args, hint)}"), file=sys.stderr)
    return code


def _is_input_error(exc: BaseException) -> bool:
    from debate_engine.app.persistence import StorageError
    from debate_engine.config.resolve import ConfigError
    from debate_engine.memory.budget import BudgetError
    from debate_engine.providers.factory import ModelConfigError

    return isinstance(exc, UserError | ConfigError | ModelConfigError | StorageError | BudgetError)


def _resume_hint(args: argparse.Namespace, lead: str) -> str:
    """How to continue the debate a failed ``run`` or ``resume`` stopped; the caller masks the URL's password."""
    thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
    if args.command not in ("run", "resume") or not thread:
        return ""
    db = f" --db {args.db}" if getattr(args, "db", None) else ""
    return f"\n{lead} continue with: debate resume {thread}{db}"


def entry() -> Any:
    """The ``debate`` command: run, then leave without the interpreter's teardown.

    Freeing every module of LangGraph, langchain-core and openai one object at a
    time takes about 0.4 s after the last output; nothing in it matters to a process
    that has flushed its output and closed its database. The exit handlers (the
    embedded model server's stop among them) still run.
    """
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: main() has already chosen the exit code
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
