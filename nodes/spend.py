"""The spend cap: reserve each phase's worst case before it runs, charge what the calls really used.

A phase runs only when its worst case (every call's counted prompt, with a
margin for the provider's own tokenizer, plus its whole output allowance)
fits what is left after the judge's share, which is kept back from the start.
When it does not fit, the debate stops taking turns (``stopped: budget``) and
the judge synthesizes from what exists, with a view sized to what is left.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from debate_engine.graph.config import judge_floor
from debate_engine.graph.state import ConversationState, Price, Spend, Tally
from debate_engine.memory import Usage
from debate_engine.providers.prices import cost

PROMPT_MARGIN = 1.1
"""Providers count prompts with their own tokenizer and template: reserve a tenth more than we count."""
FREE = Price(input=0.0, output=0.0)

Reserve = tuple[str | Sequence[str], int, int]
"""What a call may spend: ``(model spec, or the model and its fallbacks, input tokens, output tokens)``."""


def empty_tally() -> Tally:
    return Tally(calls=0, input_tokens=0, output_tokens=0, cost=0.0)


def empty_spend() -> Spend:
    return Spend(total=empty_tally(), by_agent={}, by_phase={})


def _add(tally: Tally | None, input_tokens: int, output_tokens: int, dollars: float) -> Tally:
    base = tally or empty_tally()
    return Tally(calls=base["calls"] + 1, input_tokens=base["input_tokens"] + input_tokens,
                 output_tokens=base["output_tokens"] + output_tokens, cost=base["cost"] + dollars)


def charge(spend: Spend, charges: Iterable[tuple[str, str, str, Usage]], prices: dict[str, Price]) -> Spend:
    """Add calls' usage: ``(agent_id, phase, model spec, usage)`` each."""
    out = Spend(total=spend["total"], by_agent=dict(spend["by_agent"]), by_phase=dict(spend["by_phase"]))
    for agent_id, phase, spec, usage in charges:
        i, o = usage["input_tokens"], usage["output_tokens"]
        dollars = cost(prices.get(spec, FREE), i, o)
        out["total"] = _add(out["total"], i, o, dollars)
        out["by_agent"][agent_id] = _add(out["by_agent"].get(agent_id), i, o, dollars)
        out["by_phase"][phase] = _add(out["by_phase"].get(phase), i, o, dollars)
    return out


def worst_case(prompt_tokens: int, max_output: int) -> tuple[int, int]:
    """Input and output tokens one call may use at most."""
    return int(prompt_tokens * PROMPT_MARGIN) + 16, max_output


def fits(state: ConversationState, wanted: Iterable[Reserve], keep_judge: bool = True) -> bool:
    """Whether calls fit what is left, the judge's share kept back; a call is priced at its dearest model."""
    settings = state["settings"]
    cap = settings.get("cap") or {"max_tokens": None, "max_cost": None}
    if cap["max_tokens"] is None and cap["max_cost"] is None:
        return True
    spent = state.get("spend") or empty_spend()
    tokens, dollars = spent["total"]["input_tokens"] + spent["total"]["output_tokens"], spent["total"]["cost"]
    calls: list[Reserve] = list(wanted)
    if keep_judge:
        judge = settings["judge"]
        calls.append(((judge["model"], *judge.get("fallback_models", [])), *judge_floor(judge)))
    for specs, i, o in calls:
        tokens += i + o
        dollars += max(cost(settings["prices"].get(spec, FREE), i, o)
                       for spec in ((specs,) if isinstance(specs, str) else specs))
    return (cap["max_tokens"] is None or tokens <= cap["max_tokens"]) and (
        cap["max_cost"] is None or dollars <= cap["max_cost"] + 1e-12
    )


def left_for_judge(state: ConversationState) -> int | None:
    """Prompt tokens the synthesis may use under the cap (None: no cap), its answer kept back."""
    settings = state["settings"]
    cap = settings.get("cap") or {"max_tokens": None, "max_cost": None}
    judge = settings["judge"]
    spent = (state.get("spend") or empty_spend())["total"]
    limits = []
    if cap["max_tokens"] is not None:
        limits.append(cap["max_tokens"] - spent["input_tokens"] - spent["output_tokens"] - judge["max_output_tokens"])
    price = settings["prices"].get(judge["model"], FREE)
    if cap["max_cost"] is not None and price["input"] > 0:
        left = cap["max_cost"] - spent["cost"] - cost(price, 0, judge["max_output_tokens"])
        limits.append(int(left * 1_000_000 / price["input"]))
    return int(min(limits) / PROMPT_MARGIN) - 16 if limits else None
