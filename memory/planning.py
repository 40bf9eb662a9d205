"""From a transcript to calls: the working view of one call and the summary a perspective needs.

These are the memory rules a node applies without knowing them: who sees
what (``perspective``), when to summarize (``triggers``), what a summary is
made of (``strategies``) and what fits (``budget``). Every walk starts at the
newest turn and stops where the summary's coverage begins, or when the budget
is full, so the cost of a step does not grow with the debate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from debate_engine.memory.budget import Budget, View, ViewRequest, build_view, turn_cost
from debate_engine.memory.perspective import covered_until, newest_first, opening_clarifications
from debate_engine.memory.records import SummaryRecord, Turn
from debate_engine.memory.strategies import Plan, get_strategy, keep_recent
from debate_engine.memory.summary_settings import SummarizationSettings
from debate_engine.memory.triggers import Decision, decide, measure


def working_view(
    transcript: Sequence[Turn],
    viewer: str,
    summary: SummaryRecord | None,
    *,
    system_prompt: str,
    task: str,
    budget: Budget,
    problem: str = "",
) -> View:
    """Return the prompt ``viewer`` answers: the problem, the clarifications, its summary, its uncovered turns, the task.

    The clarifications that open the transcript are pinned after the problem (a stable prefix whatever the
    summary covers). Nothing is taken out of the middle: a turn the task refers to stays where it is.
    """
    since = covered_until(summary)
    pinned = opening_clarifications(transcript)
    turns = newest_first(transcript, viewer, max(since, len(pinned)))
    return build_view(
        ViewRequest(
            system_prompt=system_prompt,
            task=task,
            summary=summary,
            newest_first=turns,
            since=since,
            to_seq=len(transcript),
            budget=budget,
            problem=problem,
            pinned=pinned,
        )
    )


def should_summarize(
    transcript: Sequence[Turn],
    viewer: str,
    summary: SummaryRecord | None,
    settings: SummarizationSettings,
    budget: Budget,
) -> Decision:
    """Whether ``viewer``'s perspective needs a summary before its next call."""
    if not settings.enabled:
        return Decision(False, "disabled", 0.0, 0)
    live = measure(newest_first(transcript, viewer, covered_until(summary)), settings, budget)
    return decide(live, summary, settings, budget)


@dataclass(frozen=True)
class Material:
    """What the next summary of a perspective reads, as the strategy chose it."""

    plan: Plan
    strategy: str


def summary_material(
    transcript: Sequence[Turn],
    viewer: str,
    summary: SummaryRecord | None,
    settings: SummarizationSettings,
    budget: Budget,
) -> Material:
    """Plan the next summary: every uncovered turn but a recent tail that fits its slice."""
    since = covered_until(summary)
    uncovered = list(newest_first(transcript, viewer, since))
    uncovered.reverse()
    keep = keep_recent(uncovered, settings.preserve_recent, budget.recent // 2)
    whole = (
        _whole_if_small(transcript, viewer, budget.recent) if settings.method == "fresh" else None
    )
    strategy = get_strategy(settings.method, settings.max_depth)
    plan = strategy.plan(uncovered, summary, keep, whole)
    if not plan.turns and plan.fold is None:
        plan = Plan(fold=None, turns=[], through=since, depth=0, parent_id=None)
    return Material(plan=plan, strategy=strategy.name)


def _whole_if_small(transcript: Sequence[Turn], viewer: str, room: int) -> list[Turn] | None:
    """Return the whole perspective when it fits ``room`` tokens (reading no further than that)."""
    out: list[Turn] = []
    for turn in newest_first(transcript, viewer, 0):
        room -= turn_cost(turn)
        if room < 0:
            return None
        out.append(turn)
    out.reverse()
    return out
