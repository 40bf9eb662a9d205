"""Exit codes, and the error a user's own mistake raises."""

from __future__ import annotations

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


class UserError(Exception):
    """A mistake in the command line's input; exits 2 with its message."""


class OutputFailed(Exception):
    """An output could not be written after the work was done; exits 6 and says how to write it again."""
