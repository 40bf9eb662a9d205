"""What a comparison's run answered and spent, read from its state: pure, so that the viewer's comparison page
reads runs as ``debate compare`` scores them without importing what runs them."""

from __future__ import annotations

from typing import Any

from debate_engine.app.measure.compare.protocols import Protocol
from debate_engine.app.measure.compare.tasks import Task, is_correct, normalise


def finished(values: dict[str, Any]) -> bool:
    """Return a run is done when its state holds a solution and its phase is ``done`` (never from ``next`` alone)."""
    return bool(values.get("solution")) and values.get("phase") == "done"


def scored(values: dict[str, Any]) -> bool:
    """Return a run counts when it finished and no spend cap cut it short.

    A debate the cap stopped still reaches its judge and finishes, but on what
    little was said (at worst the judge alone): scoring it would count the cap,
    not the protocol, mostly as wrong answers.
    """
    return finished(values) and values.get("stopped") != "budget"


def spend_of(values: dict[str, Any]) -> tuple[int, float]:
    """Return a run's tokens (prompt and completion) and dollars as billed (cache discounts included)."""
    total = (values.get("spend") or {}).get("total") or {}
    return int(total.get("input_tokens", 0) + total.get("output_tokens", 0)), float(
        total.get("cost", 0.0)
    )


def answer_of(values: dict[str, Any]) -> str | None:
    """Return the answer a run is scored by: the agents' plurality when they vote, else the judge's own.

    A run made before the judge stated an answer has no ``judge_answer``: its plurality stands in.
    """
    verdict = (values.get("solution") or {}).get("verdict") or {}
    if verdict.get("method") == "voting" or "judge_answer" not in verdict:
        return verdict.get("answer")
    return verdict["judge_answer"]


def record_of(
    protocol: Protocol, task: Task, seed: int, thread: str, values: dict[str, Any]
) -> dict[str, Any]:
    """Return what a finished run answered, each agent's first and final answer, and what it cost."""
    first: dict[str, str | None] = {}
    final: dict[str, str | None] = {}
    for turn in values.get("transcript", []):
        if turn.get("position"):
            first.setdefault(turn["speaker"], turn["position"].get("answer"))
            final[turn["speaker"]] = turn["position"].get("answer")
    tokens, cost = spend_of(values)
    status = values.get("status") or {}
    answers = {normalise(a, task.kind) for a in final.values()}
    settings = values.get("settings") or {}
    agents = len(settings.get("agents") or []) + len(settings.get("missing") or [])
    answer = answer_of(values)
    return {
        "protocol": protocol.label,
        "task": task.id,
        "seed": seed,
        "thread": thread,
        "answer": answer,
        "correct": is_correct(task, answer),
        "tokens": tokens,
        "cost": cost,
        "wall_s": round(float(status.get("updated_at", 0) - status.get("started_at", 0)), 3),
        "flips": [[is_correct(task, first[a]), is_correct(task, final[a])] for a in sorted(final)],
        "consensus": len(final) == agents > 0 and len(answers) == 1 and None not in answers,
        "escalated": escalated(values),
        "partial": partial(values),
    }


def partial(values: dict[str, Any]) -> str | None:
    """Return ``partial: 2 of 3 agents`` for a run that went on without some agents (counted apart); None when whole."""
    panel = ((values.get("solution") or {}).get("verdict") or {}).get("panel") or {}
    return panel.get("partial")


def escalated(values: dict[str, Any]) -> bool | None:
    """Return whether an escalate run's vote split, so that its voters debated; None for any other protocol."""
    ballot = ((values.get("solution") or {}).get("verdict") or {}).get("ballot")
    return None if ballot is None else ballot["outcome"] != "settled"
