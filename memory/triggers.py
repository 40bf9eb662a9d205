"""The decision to summarize: triggers OR-combined, then guards.

Usage is measured on the live history, what the agent would otherwise be
shown: its latest summary plus the perspective turns that summary does not
cover. Ratios are taken against the history budget (summary + recent slices
of the working context). One rule overrides every guard: when the uncovered
turns no longer fit the recent slice (less what a summary longer than its own
slice takes of it: views show summaries whole), the view would have to leave some out,
so a summary must be made now. That is what keeps every view whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from debate_engine.memory.budget import Budget, recent_room, turn_cost
from debate_engine.memory.records import SummaryRecord, Turn
from debate_engine.memory.summary_settings import SummarizationSettings


@dataclass(frozen=True)
class Live:
    """What an agent would see verbatim: its uncovered turns, measured newest first."""

    turns: int
    tokens: int
    """Tokens of the turns as a view renders them."""
    chars: int
    saturated: bool = False
    """True when counting stopped early because every trigger had already fired."""


def measure(newest_first: Iterable[Turn], settings: SummarizationSettings, budget: Budget) -> Live:
    """Count the uncovered turns, stopping once no trigger could change its answer."""
    turns = tokens = chars = 0
    enough_tokens = max(budget.recent, settings.token_limit, budget.history) + 1
    enough_turns = max(settings.every_n_turns, settings.cooldown_turns, settings.min_turns) + 1
    for turn in newest_first:
        turns += 1
        tokens += turn_cost(turn)
        chars += len(turn["content"])
        if tokens >= enough_tokens and turns >= enough_turns and chars >= settings.threshold:
            return Live(turns, tokens, chars, saturated=True)
    return Live(turns, tokens, chars)


@dataclass(frozen=True)
class Decision:
    """Whether to summarize now, and why (or why not)."""

    fire: bool
    reason: str
    ratio: float
    live_tokens: int


def decide(
    live: Live, summary: SummaryRecord | None, settings: SummarizationSettings, budget: Budget
) -> Decision:
    """Decide whether a perspective should be summarized before its next call."""
    summary_tokens = summary["tokens_after"] if summary else 0  # a view shows it whole
    recent = recent_room(budget, summary_tokens)
    tokens = live.tokens + summary_tokens
    ratio = tokens / budget.history if budget.history > 0 else float("inf")

    def no(why: str) -> Decision:
        return Decision(False, why, ratio, tokens)

    if not settings.enabled:
        return no("disabled")
    if live.tokens > recent and live.turns >= 1:
        return Decision(
            True,
            f"overflow: {live.tokens} uncovered tokens > recent budget {recent}",
            ratio,
            tokens,
        )
    chars = live.chars + (len(summary["text"]) if summary else 0)
    reasons = _fired(settings, chars=chars, tokens=tokens, ratio=ratio, turns=live.turns)
    if not reasons:
        return no("below every trigger")
    reason = "; ".join(reasons)
    if live.turns < settings.min_turns:
        return no(f"{reason}, but only {live.turns} new turns (< {settings.min_turns})")
    if summary is not None:
        in_cooldown = live.turns < settings.cooldown_turns
        rearmed = budget.history > 0 and summary_tokens / budget.history < settings.reset_ratio
        if in_cooldown and not rearmed:
            return no(
                f"{reason}, but in cooldown and not re-armed below {settings.reset_ratio:.2f}"
            )
    return Decision(True, reason, ratio, tokens)


def _fired(
    settings: SummarizationSettings, *, chars: int, tokens: int, ratio: float, turns: int
) -> list[str]:
    """Name every threshold the perspective has reached."""
    reasons = []
    if settings.threshold and chars >= settings.threshold:
        reasons.append(f"chars {chars} >= {settings.threshold}")
    if settings.token_limit and tokens >= settings.token_limit:
        reasons.append(f"tokens {tokens} >= {settings.token_limit}")
    if ratio >= settings.trigger_ratio:
        reasons.append(f"token_ratio {ratio:.2f} >= {settings.trigger_ratio:.2f}")
    if settings.every_n_turns and turns >= settings.every_n_turns:
        reasons.append(f"turns {turns} >= {settings.every_n_turns}")
    return reasons
