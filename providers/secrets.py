"""Keep API keys out of everything the engine writes: errors, logs, reports, checkpoints."""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"
MIN_SECRET = 6
BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{6,}")


def secrets() -> list[str]:
    """Every configured key: any ``*_API_KEY`` or ``*_TOKEN`` variable in the environment."""
    found = [
        v for k, v in os.environ.items() if (k.endswith(("_API_KEY", "_TOKEN", "_SECRET"))) and len(v) >= MIN_SECRET
    ]
    return sorted(set(found), key=len, reverse=True)


def redact(text: str) -> str:
    """Remove every configured key (and any bearer token) from ``text``."""
    for key in secrets():
        text = text.replace(key, REDACTED)
    return BEARER.sub(r"\1" + REDACTED, text)
