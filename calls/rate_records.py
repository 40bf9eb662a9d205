"""A run's rate limits as its settings fix them: what the config file, the context and the flags state
(``config.rate_limits``), and what the limiter (``calls.limits``) holds each run to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

PERIOD_S = 60.0
"""Providers state their limits per minute."""


class RateLimit(TypedDict):
    """One model's (or provider's) limits per period; None: no limit of that kind."""

    rpm: float | None
    """Requests per period."""
    tpm: float | None
    """Tokens per period: prompt and output allowance at request time, settled to the usage reported."""


class RateLimits(TypedDict):
    """A run's rate limits as its settings fix them."""

    models: dict[str, RateLimit]
    """By model spec (``openai:gpt-4o-mini``)."""
    providers: dict[str, RateLimit]
    """By provider (``openai``): every model of it draws on these too."""
    period_s: float
    """The seconds a limit counts over: 60 as providers state them (a test runs on a scaled clock)."""


def no_limits() -> RateLimits:
    """Return the limits of a run that states none."""
    return RateLimits(models={}, providers={}, period_s=PERIOD_S)


def limits_of(settings: Mapping[str, Any]) -> RateLimits:
    """Return the rate limits fixed in a run's settings (none in a debate set up before they existed)."""
    return settings.get("rate_limits") or no_limits()
