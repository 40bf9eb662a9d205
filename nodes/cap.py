"""The spend cap: reserve each phase's worst case before it runs, charge what the calls really used.

A phase runs only when its worst case (every call's counted prompt, with a
margin for the provider's own tokenizer, plus its whole output allowance)
fits what is left after the judge's share, which is kept back from the start.
When it does not fit, the debate stops taking turns (``stopped: budget``) and
the judge synthesizes from what exists, with a view sized to what is left.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from debate_engine.calls.ledger import Tally, empty_spend
from debate_engine.calls.schemas import tool_tokens
from debate_engine.calls.spend import FREE, PROMPT_MARGIN, Reserve, cached, dearest, judge_floor
from debate_engine.config.settings import AgentProfile
from debate_engine.graph.state import ConversationState
from debate_engine.nodes.solution import judge_schema
from debate_engine.providers.prices import cost, worst_input


def fits(state: ConversationState, wanted: Iterable[Reserve], keep_judge: bool = True) -> bool:
    """Whether calls fit what is left, the judge's share kept back; a call is priced at its dearest model."""
    settings = state["settings"]
    cap = settings.get("cap") or {"max_tokens": None, "max_cost": None}
    if cap["max_tokens"] is None and cap["max_cost"] is None:
        return True
    spent = state.get("spend") or empty_spend()
    tokens, dollars = (
        spent["total"]["input_tokens"] + spent["total"]["output_tokens"],
        spent["total"]["cost"],
    )
    calls: list[Reserve] = list(wanted)
    if (
        keep_judge and settings.get("protocol") != "sample"
    ):  # the sample graph (single, vote) has no judge
        judge = settings["judge"]
        prompt, answer = judge_floor(judge["context_window"], judge["max_output_tokens"])
        calls.append(
            (
                (judge["model"], *judge.get("fallback_models", [])),
                prompt + judge_tools(judge),
                answer,
            )
        )
    for specs, i, o in calls:
        tokens += i + o
        dollars += dearest(settings["prices"], specs, i, o)
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
        limits.append(
            cap["max_tokens"]
            - spent["input_tokens"]
            - spent["output_tokens"]
            - judge["max_output_tokens"]
        )
    if cap["max_cost"] is not None:
        # Any of its models may answer, and a prompt may bill whole as a cache write (Anthropic's 1.25x):
        # the room is what the dearest of them leaves at the dearest price a prompt token can bill at.
        for spec in (judge["model"], *judge.get("fallback_models", [])):
            price = settings["prices"].get(spec, FREE)
            if worst_input(price) > 0:
                left = cap["max_cost"] - spent["cost"] - cost(price, 0, judge["max_output_tokens"])
                limits.append(int(left * 1_000_000 / worst_input(price)))
    return int(min(limits) / PROMPT_MARGIN) - 16 - judge_tools(judge) if limits else None


def judge_tools(judge: AgentProfile) -> int:
    """Prompt tokens of the synthesis's tool definition, which the provider bills with its prompt."""
    return tool_tokens(judge_schema(judge["max_output_tokens"]))


def spend_figures(total: Tally) -> dict[str, Any]:
    """Return the status record's spend: tokens, dollars as billed, cached prompt tokens and what the cache saved."""
    return {
        "tokens": total["input_tokens"] + total["output_tokens"],
        "cost": round(total["cost"], 6),
        "cached_tokens": cached(total),
        "saved": round(total.get("saved", 0.0), 6),
    }
