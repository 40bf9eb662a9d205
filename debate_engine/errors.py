"""The one base of the errors a user sees: each carries its exit code and the lead of its message.

The command line maps a failure to its exit code by this base alone (``app/cli/main.py``); nothing here imports
another module of the engine, so every layer may raise these.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK = 0
EXIT_INPUT = 2
"""Bad input or configuration: nothing ran."""
EXIT_PROVIDER = 3
"""A model provider failed after retries; finished turns are kept and the debate resumes."""
EXIT_SUMMARY = 4
"""A summary failed and ``abortOnFailure`` is set."""
EXIT_STORAGE = 5
"""The database failed during a run (disk full, server gone); what was saved stays and the debate resumes."""
EXIT_OUTPUT = 6
"""An output file could not be written at the end (disk full); the debate is saved and can be written again."""
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141
"""Stdout was closed by the reader (``| head``), as a shell reports SIGPIPE."""


class DebateError(Exception):
    """An error meant for the user: its message says what went wrong and how to fix it."""

    exit_code: ClassVar[int] = EXIT_INPUT
    lead: ClassVar[str] = ""
    """Put before the message on the command line (``the model provider failed: ``)."""
    kept: ClassVar[str] = "Every finished turn is saved;"
    """What the failure left, before the command line says how to resume the debate."""

    @property
    def code(self) -> int:
        """The exit code of this error (a signal's depends on the signal)."""
        return self.exit_code

    def message(self) -> str:
        """Return the message for the user, its lead first."""
        return f"{self.lead}{self}"

    def lines(self) -> list[str]:
        """Each problem on a line of its own (a configuration may have several)."""
        return [self.message()]


class InputError(DebateError):
    """The user's input or configuration is wrong: nothing ran."""

    exit_code = EXIT_INPUT


class ProviderError(DebateError, RuntimeError):
    """A model call failed after its retries and fallbacks; finished turns are kept. The message names the agent,
    the model and the cause."""

    exit_code, lead = EXIT_PROVIDER, "the model provider failed: "


class SummaryError(DebateError):
    """A summary failed and the settings say to stop."""

    exit_code = EXIT_SUMMARY


class StorageError(DebateError, RuntimeError):
    """The database failed during a run (disk full, server gone); what was saved before stays."""

    exit_code = EXIT_STORAGE
    kept = "The turns saved before the failure are kept; when the database works again,"
    """Not the turn whose write failed, which the resume makes again."""


class OutputError(DebateError):
    """An output could not be written after the work was done."""

    exit_code = EXIT_OUTPUT
