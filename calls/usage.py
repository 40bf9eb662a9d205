"""Usage as the provider reported it, in the records' shape; our own count when it reports none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from debate_engine.memory.records import Usage
from debate_engine.memory.tokens import count_tokens


def usage_of(message: Any) -> Usage | None:
    """Return the provider's usage on a message, cached prompt tokens included, or None."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    usage = Usage(
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
        total_tokens=int(meta.get("total_tokens", 0)),
    )
    details: Mapping[str, Any] = meta.get("input_token_details") or {}
    # langchain's ``input_token_details`` name prompt-cache reads ``cache_read``, writes ``cache_creation``.
    if read := _cached(details, "cache_read"):
        usage["cache_read_tokens"] = read
    if written := _cached(details, "cache_creation"):
        usage["cache_write_tokens"] = written
    return usage


def _cached(details: Mapping[str, Any], theirs: str) -> int:
    """Return the prompt tokens langchain reports under ``theirs``."""
    # On OpenAI's priority and flex tiers langchain prefixes the key with the tier's name.
    return sum(int(v or 0) for k, v in details.items() if k == theirs or k.endswith("_" + theirs))


def counted_usage(prompt: str, reply: str) -> Usage:
    """Our own count of a call the provider reported no usage for (so that it is charged, not free)."""
    i, o = count_tokens(prompt), count_tokens(reply)
    return Usage(input_tokens=i, output_tokens=o, total_tokens=i + o)
