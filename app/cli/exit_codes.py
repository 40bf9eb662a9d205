"""Exit codes, and the errors a user's own mistake or a failed output raises (on the one base)."""

from __future__ import annotations

from debate_engine.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_PROVIDER,
    EXIT_STORAGE,
    EXIT_SUMMARY,
    EXIT_TERMINATED,
    InputError,
    OutputTrouble,
)

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT",
    "EXIT_PROVIDER",
    "EXIT_STORAGE",
    "EXIT_SUMMARY",
    "EXIT_TERMINATED",
    "OutputFailed",
    "UserError",
]


class UserError(InputError):
    """A mistake in the command line's input; exits 2 with its message."""


class OutputFailed(OutputTrouble):
    """An output could not be written after the work was done; exits 6 and says how to write it again."""
