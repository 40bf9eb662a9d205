"""What a provider says of its rate limits in a response's ``x-ratelimit-*`` headers, and which limit to keep.

OpenAI (and the servers that copy it) answer every request with the account's limits for the model and what is
left of them: ``x-ratelimit-limit-requests`` and ``-tokens`` (per minute), ``-remaining-requests`` and
``-tokens``, ``-reset-requests`` and ``-tokens`` (the time until the bucket is full again, ``6m0s``, ``1.5s``,
``120ms``). The limiter keeps to the stricter of the limit it was told and the one it read, and raises its level to
what the provider counts (others on the same account spend it too). The reset times are read, but a bucket that
refills continuously at the limit's rate already knows them: they are its level over its rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from debate_engine.calls.buckets import Bucket, Take, Unit

UNITS: tuple[Unit, ...] = ("requests", "tokens")
KEYS: dict[Unit, str] = {"requests": "rpm", "tokens": "tpm"}
"""Each unit's key in a run's stated limits."""
PREFIX = "x-ratelimit-"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass(frozen=True)
class Stated:
    """What one response said, by unit; a unit it did not name is absent."""

    limit: dict[Unit, float] = field(default_factory=dict)
    remaining: dict[Unit, float] = field(default_factory=dict)
    reset_s: dict[Unit, float] = field(default_factory=dict)


def stated(headers: Mapping[str, Any] | None) -> Stated | None:
    """Return what ``headers`` state of the rate limits, or None when they state no limit."""
    if not headers:
        return None
    lower = {str(k).lower(): v for k, v in headers.items() if str(k).lower().startswith(PREFIX)}
    said = Stated()
    for unit in UNITS:
        for kind, into in (("limit", said.limit), ("remaining", said.remaining)):
            value = _count(lower.get(f"{PREFIX}{kind}-{unit}"))
            if value is not None:
                into[unit] = value
        reset = duration_s(lower.get(f"{PREFIX}reset-{unit}"))
        if reset is not None:
            said.reset_s[unit] = reset
    return said if any(v > 0 for v in said.limit.values()) else None


def duration_s(value: Any) -> float | None:
    """Return a Go-style duration (``6m0s``, ``1.5s``, ``120ms``, ``1h2m``) or plain seconds as seconds, or None."""
    if value is None:
        return None
    text = str(value).strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * _SECONDS[u] for n, u in parts)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@dataclass(frozen=True)
class Kept:
    """The limit of one kind a run keeps to on a model, and whose it is."""

    value: float | None
    source: str
    """``configured`` (the run's settings), ``read`` (the provider's headers) or ``none``."""
    configured: float | None
    read: float | None


def stricter(configured: float | None, read: float | None) -> tuple[float | None, str]:
    """Return the limit to keep to and whose it is: ``configured``, ``read`` or ``none``."""
    if read and (not configured or read < configured):
        return read, "read"
    if configured:
        return configured, "configured"
    return None, "none"


def kept_limits(configured: Mapping[str, Any], read: Mapping[Unit, float]) -> dict[Unit, Kept]:
    """Return, per unit, the limit to keep to: the stricter of the ``configured`` (``rpm``/``tpm``) and the read."""
    out = {}
    for unit in UNITS:
        given = configured.get(KEYS[unit])
        value, source = stricter(given, read.get(unit))
        out[unit] = Kept(value, source, given, read.get(unit))
    return out


def floors_of(said: Stated, buckets: Sequence[Bucket]) -> list[Take]:
    """Return what each of a model's ``buckets`` holds at least, as the provider counts it: its limit less what
    is left (only where it said both, and counts something)."""
    floors = []
    for bucket in buckets:
        if bucket.unit in said.limit and bucket.unit in said.remaining:
            used = said.limit[bucket.unit] - said.remaining[bucket.unit]
            if used > 0:
                floors.append((bucket, used))
    return floors


def adopted(spec: str, unit: Unit, kept: Kept, period_s: float) -> dict[str, Any]:
    """Return the event that tells a run the limit of ``unit`` it keeps to on ``spec`` now, and whose it is."""
    return {
        "event": "rate_limit_adopted",
        "model": spec,
        "unit": unit,
        "limit": kept.value,
        "source": kept.source,
        "configured": kept.configured,
        "read": kept.read,
        "period_s": period_s,
    }


def _count(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def headers_of(out: Any) -> Mapping[str, Any] | None:
    """Return the response headers an answer carries (``include_response_headers``: its ``response_metadata``),
    or the headers of the response a failed request's error carries; None when there are none."""
    raw = out.get("raw") if isinstance(out, dict) else out
    meta = getattr(raw, "response_metadata", None)
    answered = meta.get("headers") if isinstance(meta, Mapping) else None
    if isinstance(answered, Mapping):
        return answered
    refused = getattr(getattr(out, "response", None), "headers", None)
    return refused if isinstance(refused, Mapping) else None
