"""The ``debate`` command line: run, list, show, report and resume debates.

Exit codes: 0 done, 2 bad input or config, 3 provider failure, 4 summarizing
failed with ``abortOnFailure``, 5 the database failed during the run, 6 an
output file could not be written at the end, 130 interrupted (SIGINT), 143
terminated (SIGTERM). Every step is checkpointed, so
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
import re
import sys
import warnings
from collections.abc import Iterator
from importlib import import_module
from typing import Any, TextIO

from debate_engine import __version__
from debate_engine.app.cli import COMMANDS
from debate_engine.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INPUT,
    EXIT_OUTPUT,
    DebateError,
    ProviderError,
)
from debate_engine.providers.failures import is_provider_error
from debate_engine.providers.secrets import redact, redact_logs

NOTES = "debate.note"
"""The logger of notes a user should see unless ``--quiet`` (the embedded model's start): plain lines on stderr."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="debate", description="Multi-agent debates on LangGraph.")
    parser.add_argument("--version", action="version", version=f"debate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        import_module(f"debate_engine.app.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``debate`` console script."""
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    redact_logs()
    args = _parser().parse_args(argv)
    with _stderr(bool(getattr(args, "quiet", False))):
        try:
            return int(import_module(f"debate_engine.app.cli.{args.command}").main(args))
        except (
            BrokenPipeError
        ):  # stdout closed early (`debate list | head`): the debate itself is saved
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        except Exception as exc:  # every failure becomes a named message and an exit code
            return _failure(exc, args)


@contextlib.contextmanager
def _stderr(quiet: bool) -> Iterator[None]:
    """``--quiet`` leaves errors only; otherwise notes (the embedded model's start) show as plain lines.

    Everything is put back afterwards: tests, and Python callers of ``main``, run many commands in one process.
    """
    notes = logging.getLogger(NOTES)
    # Only the handlers that print on stderr are raised: a log kept elsewhere (a file, a test's capture) keeps all.
    screens = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    before = notes.level, notes.propagate, list(notes.handlers), [h.level for h in screens]
    notes.propagate, notes.handlers = False, ([] if quiet else [_NoteHandler()])
    notes.setLevel(logging.ERROR if quiet else logging.INFO)
    for handler in screens if quiet else ():
        handler.setLevel(logging.ERROR)
    with warnings.catch_warnings():
        if quiet:  # a library's warning (a transport's, a deprecation) is not an error
            warnings.simplefilter("ignore")
        try:
            yield
        finally:
            notes.setLevel(before[0])
            notes.propagate, notes.handlers = before[1], before[2]
            for handler, level in zip(screens, before[3], strict=True):
                handler.setLevel(level)


class _NoteHandler(logging.StreamHandler[TextIO]):
    """A note on stderr as a plain line, on a line of its own even under the live progress line."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def format(self, record: logging.LogRecord) -> str:
        return ("\r\033[K" if self.stream.isatty() else "") + record.getMessage()


QUOTED = re.compile(r"(?<!\w)(['\"])([^'\"\n]{100,}?)\1(?!\w)")
"""A value some layer quoted whole in a message: 100 characters or more between quotes (not apostrophes)."""


LONG_WORD = re.compile(r"\S{200,}")
"""A value quoted without quotes (a path, an id): 200 characters or more without a space."""


def _short(message: str) -> str:
    """``message`` with every long quoted value cut to about 80 characters, as the config's own messages are."""
    message = QUOTED.sub(lambda m: f"{m[1]}{m[2][:38]}...{m[2][-38:]}{m[1]}", message)
    return LONG_WORD.sub(lambda m: f"{m[0][:38]}...{m[0][-38:]}", message)


def _failure(exc: BaseException, args: argparse.Namespace) -> int:
    """Print the failure for the user and return its exit code: by the one error base alone.

    A provider's own error that escaped the call road (a client's, an HTTP library's) is a provider failure too;
    any other exception is a bug, raised with its traceback.
    """
    if not isinstance(exc, DebateError):
        if not is_provider_error(exc):
            raise exc
        exc = ProviderError(str(exc))
    if exc.code == EXIT_INPUT:
        problems = [_short(p) for p in exc.lines()]
        text = "\n  ".join(["invalid input:", *problems] if len(problems) > 1 else problems)
        print(redact(f"error: {text}"), file=sys.stderr)
    elif exc.code == EXIT_OUTPUT:
        print(redact(_short(f"error: {exc.message()}")), file=sys.stderr)
    else:
        print(
            redact(_short(f"error: {exc.message()}{_resume_hint(args, exc.kept)}")), file=sys.stderr
        )
    return exc.code


def _resume_hint(args: argparse.Namespace, lead: str) -> str:
    """How to continue the debate a failed ``run`` or ``resume`` stopped; the caller masks the URL's password."""
    thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
    if args.command not in ("run", "resume") or not thread:
        return ""
    db = f" --db {args.db}" if getattr(args, "db", None) else ""
    return f"\n{lead} continue with: debate resume {thread}{db}"


def entry() -> Any:
    """Return the ``debate`` command: run, then leave without the interpreter's teardown.

    Freeing every module of LangGraph, langchain-core and openai one object at a
    time takes about 0.4 s after the last output; nothing in it matters to a process
    that has flushed its output and closed its database. The exit handlers (the
    embedded model server's stop among them) still run.
    """
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(
            OSError, ValueError
        ):  # a closed pipe: main() has already chosen the exit code
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
