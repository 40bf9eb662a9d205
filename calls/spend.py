"""Money and tokens of model calls: what a call may spend at most, and what calls spent, priced per model.

The rules that read a debate's state (whether the next phase fits the cap,
what is left for the judge) are in ``nodes.cap``; this module is plain
arithmetic over records, so config resolution and the nodes share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from debate_engine.calls.ledger import (
    Price,
    Spend,
    Tally,
    empty_tally,
)
from debate_engine.memory.records import Usage
from debate_engine.providers.prices import cost, worst_input

JUDGE_PROMPT_FLOOR = 2048
"""Prompt tokens the synthesis is sure to have under a spend cap: its view shrinks to what is left, never below."""


PROMPT_MARGIN = 1.1
"""Providers count prompts with their own tokenizer and template: reserve a tenth more than we count."""
FREE = Price(input=0.0, output=0.0)

Reserve = tuple[str | Sequence[str], int, int]
"""What a call may spend: ``(model spec, or the model and its fallbacks, input tokens, output tokens)``."""


def bill(price: Price, usage: Usage) -> tuple[float, float]:
    """Dollars one call is billed (cached prompt tokens at the cache prices), and what the cache saved on it."""
    read, write = usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0)
    billed = cost(price, usage["input_tokens"], usage["output_tokens"], read, write)
    return billed, cost(price, usage["input_tokens"], usage["output_tokens"]) - billed


def _add(tally: Tally | None, usage: Usage, dollars: float, saved: float) -> Tally:
    base = tally or empty_tally()
    return Tally(
        calls=base["calls"] + 1,
        input_tokens=base["input_tokens"] + usage["input_tokens"],
        output_tokens=base["output_tokens"] + usage["output_tokens"],
        cost=base["cost"] + dollars,
        cache_read_tokens=cached(base) + usage.get("cache_read_tokens", 0),
        cache_write_tokens=base.get("cache_write_tokens", 0) + usage.get("cache_write_tokens", 0),
        saved=base.get("saved", 0.0) + saved,
    )


def cached(tally: Tally) -> int:
    """Prompt tokens read from the provider's cache (0 for a tally from before they were counted)."""
    return tally.get("cache_read_tokens", 0)


def charge(
    spend: Spend, charges: Iterable[tuple[str, str, str, Usage]], prices: dict[str, Price]
) -> Spend:
    """Add calls' usage, as billed: ``(agent_id, phase, model spec, usage)`` each."""
    out = Spend(
        total=spend["total"], by_agent=dict(spend["by_agent"]), by_phase=dict(spend["by_phase"])
    )
    for agent_id, phase, spec, usage in charges:
        dollars, saved = bill(prices.get(spec, FREE), usage)
        out["total"] = _add(out["total"], usage, dollars, saved)
        out["by_agent"][agent_id] = _add(out["by_agent"].get(agent_id), usage, dollars, saved)
        out["by_phase"][phase] = _add(out["by_phase"].get(phase), usage, dollars, saved)
    return out


def worst_case(prompt_tokens: int, max_output: int) -> tuple[int, int]:
    """Input and output tokens one call may use at most."""
    return int(prompt_tokens * PROMPT_MARGIN) + 16, max_output


def judge_floor(context_window: int, max_output_tokens: int) -> tuple[int, int]:
    """Prompt and answer tokens kept back from the start for the synthesis."""
    total = max(0, context_window - max_output_tokens)  # a bad window is reported elsewhere
    return min(total, JUDGE_PROMPT_FLOOR), max_output_tokens


def dearest(
    prices: dict[str, Price], specs: str | Sequence[str], input_tokens: int, output_tokens: int
) -> float:
    """Dollars for a call at the dearest of the models that may answer it, every prompt token at the dearer of
    the input and the cache-write price (a provider may bill the whole prompt as a cache write)."""
    return max(
        _worst(prices.get(spec, FREE), input_tokens, output_tokens)
        for spec in ((specs,) if isinstance(specs, str) else specs)
    )


def _worst(price: Price, input_tokens: int, output_tokens: int) -> float:
    return cost(
        Price(input=worst_input(price), output=price["output"]), input_tokens, output_tokens
    )
