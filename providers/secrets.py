"""Keep secrets out of everything the engine writes: errors, logs, reports, checkpoints.

Two kinds are removed: the values of secret-named environment variables (a
provider may quote a key back in its error), and the password of any URL or
``password=`` setting, such as a ``--db postgresql://user:PASSWORD@host/db``
the user typed, which no variable names.
"""

from __future__ import annotations

import logging
import os
import re

REDACTED = "[redacted]"
MASK = "***"
MIN_SECRET = 6
SECRET_NAMES = ("_API_KEY", "_TOKEN", "_SECRET", "PASSWORD", "_PASSWD", "_DSN", "DATABASE_URL")
"""An environment variable whose name ends so holds a secret (``PGPASSWORD`` and ``DB_PASSWORD`` alike)."""
BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{6,}")
URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]*:)[^\s@]+(@)")
"""``scheme://user:PASSWORD@``: the password runs to the ``@``, even one with an unescaped ``/`` in it."""
SETTING_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|[^\s&;,]+)", re.IGNORECASE)
"""``password=...`` in a libpq keyword string or a URL's query."""


def is_secret_name(name: str) -> bool:
    """Return True for a variable whose value must never be shown: keys, tokens, passwords, database URLs."""
    return name.upper().endswith(SECRET_NAMES)


def secrets() -> list[str]:
    """Every configured secret, longest first so that a key containing another is removed whole."""
    found = [v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET]
    return sorted(set(found), key=len, reverse=True)


def mask_passwords(text: str) -> str:
    """Replace the password of every URL and ``password=`` setting in ``text`` with ``***``."""
    text = URL_PASSWORD.sub(r"\1" + MASK + r"\2", text)
    return SETTING_PASSWORD.sub(r"\1" + MASK, text)


def redact(text: str) -> str:
    """Remove every password, configured secret and bearer token from ``text``.

    Passwords are masked first, so a database URL that is also in ``DATABASE_URL``
    still reads as ``postgresql://user:***@host/db`` rather than vanishing whole.
    """
    text = mask_passwords(text)
    for key in secrets():
        text = text.replace(key, REDACTED)
    return BEARER.sub(r"\1" + REDACTED, text)


class RedactLogs(logging.Filter):
    """Rewrite each record without secrets before its handler writes it; a library may log a URL or an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_logs() -> None:
    """Filter every handler of the root logger through :class:`RedactLogs`, once."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactLogs) for f in handler.filters):
            handler.addFilter(RedactLogs())
