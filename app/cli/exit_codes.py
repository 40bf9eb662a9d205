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
    OutputError,
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
    "OutputError",
    "InputError",
]
