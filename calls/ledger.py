"""The shapes of spending: a price, a cap, a tally of what calls spent, a debate's spend.

Plain records, importing nothing that reaches a provider: the state's schema
(``graph.state``) and the run settings (``config.settings``) use them; the
arithmetic over them is ``calls.spend``.
"""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from debate_engine.memory.records import ModelPrice


class SpendCap(TypedDict):
    """At most this much over every call; None: no cap."""

    max_tokens: int | None
    max_cost: float | None


class Tally(TypedDict):
    """Tokens, calls and dollars spent."""

    calls: int
    input_tokens: int
    """Every prompt token, the cached ones included."""
    output_tokens: int
    cost: float
    """US dollars as the provider bills them: cached prompt tokens at the cache prices."""
    cache_read_tokens: NotRequired[int]
    """Prompt tokens read from the provider's cache; absent (a checkpoint from before they were counted): 0."""
    cache_write_tokens: NotRequired[int]
    """Prompt tokens written to the provider's cache; absent: 0."""
    saved: NotRequired[float]
    """Dollars the cache saved against every prompt token at the input price (negative when its writes cost more
    than they saved); absent: 0."""


class Spend(TypedDict):
    """What the debate has spent, in total and by agent and by phase (summaries and the judge included)."""

    total: Tally
    by_agent: dict[str, Tally]
    by_phase: dict[str, Tally]


Price = ModelPrice
"""US dollars per million tokens."""


def empty_tally() -> Tally:
    return Tally(
        calls=0,
        input_tokens=0,
        output_tokens=0,
        cost=0.0,
        cache_read_tokens=0,
        cache_write_tokens=0,
        saved=0.0,
    )


def empty_spend() -> Spend:
    return Spend(total=empty_tally(), by_agent={}, by_phase={})
