"""Usage as the provider reported it, in the records' shape; our own count when it reports none."""

from __future__ import annotations

from typing import Any

from debate_engine.memory.records import Usage
from debate_engine.memory.tokens import count_tokens


def usage_of(message: Any) -> Usage | None:
    """The provider's usage on a message, or None."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    return Usage(
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
        total_tokens=int(meta.get("total_tokens", 0)),
    )


def counted_usage(prompt: str, reply: str) -> Usage:
    """Our own count of a call the provider reported no usage for (so that it is charged, not free)."""
    i, o = count_tokens(prompt), count_tokens(reply)
    return Usage(input_tokens=i, output_tokens=o, total_tokens=i + o)
