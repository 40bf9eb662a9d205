"""The decision to summarize: triggers OR-combined, then guards.

Usage is measured on the live history, what the agent would otherwise be
shown: its latest summary plus the perspective turns that summary does not
cover. Ratios are taken against the history budget (summary + recent slices
of the working context), the part of the prompt history has to fit in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.records import SummaryRecord, Turn
from memory.settings import SummarizationSettings
from memory.tokens import count_tokens

EMERGENCY_RATIO = 1.0


@dataclass(frozen=True)
class Decision:
    """Whether to summarize now, and why (or why not)."""

    fire: bool
    reason: str
    ratio: float
    live_tokens: int
    depth_capped: bool = False


def live_usage(summary: SummaryRecord | None, fresh_turns: Sequence[Turn]) -> tuple[int, int]:
    """Characters and tokens of the summary plus the turns it does not cover."""
    chars = sum(len(t["content"]) for t in fresh_turns)
    tokens = sum(t["tokens"] or count_tokens(t["content"]) for t in fresh_turns)
    if summary is not None:
        chars += len(summary["text"])
        tokens += summary["tokens_after"]
    return chars, tokens


def decide(
    fresh_turns: Sequence[Turn],
    summary: SummaryRecord | None,
    settings: SummarizationSettings,
    history_budget: int,
) -> Decision:
    """Decide whether a perspective should be summarized before its next call."""
    chars, tokens = live_usage(summary, fresh_turns)
    ratio = tokens / history_budget if history_budget > 0 else float("inf")

    def no(why: str, capped: bool = False) -> Decision:
        return Decision(False, why, ratio, tokens, capped)

    if not settings.enabled:
        return no("disabled")
    reasons = []
    if settings.threshold and chars >= settings.threshold:
        reasons.append(f"chars {chars} >= {settings.threshold}")
    if settings.token_limit and tokens >= settings.token_limit:
        reasons.append(f"tokens {tokens} >= {settings.token_limit}")
    if ratio >= settings.trigger_ratio:
        reasons.append(f"token_ratio {ratio:.2f} >= {settings.trigger_ratio:.2f}")
    if settings.every_n_turns and len(fresh_turns) >= settings.every_n_turns:
        reasons.append(f"turns {len(fresh_turns)} >= {settings.every_n_turns}")
    if not reasons:
        return no("below every trigger")
    reason = "; ".join(reasons)
    emergency = ratio >= EMERGENCY_RATIO

    if len(fresh_turns) < settings.min_turns:
        return no(f"{reason}, but only {len(fresh_turns)} new turns (< {settings.min_turns})")
    if summary is not None:
        if settings.method == "rolling" and summary["depth"] >= settings.max_depth:
            return no(f"{reason}, but the chain is at depth {summary['depth']} (max {settings.max_depth})", True)
        in_cooldown = len(fresh_turns) < settings.cooldown_turns
        rearmed = history_budget > 0 and summary["tokens_after"] / history_budget < settings.reset_ratio
        if in_cooldown and not rearmed and not emergency:
            return no(f"{reason}, but in cooldown and not re-armed below {settings.reset_ratio:.2f}")
    if emergency:
        reason = f"emergency: {reason}"
    return Decision(True, reason, ratio, tokens)


def verbatim_limit(
    fresh_turns: Sequence[Turn],
    summary: SummaryRecord | None,
    settings: SummarizationSettings,
    history_budget: int,
    floor: int = 2,
) -> int | None:
    """Past the depth cap, how many newest turns a view may still show verbatim.

    With no more summaries allowed, the tail shrinks until summary + tail is
    back under the trigger, never below ``floor`` turns. None: no limit.
    """
    if not settings.enabled or summary is None or settings.method != "rolling" or summary["depth"] < settings.max_depth:
        return None
    room = settings.trigger_ratio * history_budget - summary["tokens_after"]
    kept = 0
    for turn in reversed(fresh_turns):
        room -= turn["tokens"]
        if room < 0:
            break
        kept += 1
    return max(kept, floor)
