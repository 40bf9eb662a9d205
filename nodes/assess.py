"""The judge's check after a round: has the debate converged, or is the best proposal good enough?

``convergence`` stops a debate once every agent holds the same position. When
the agents state short answers, the answers decide (``positions.converged``,
no call); otherwise the judge reads every agent's current position and
proposal in one structured call and says whether another round would change
anything. ``quality`` has the judge pick the best current proposal and score
it by the evaluators' rubric; at or above the threshold the debate goes to
synthesis. Either way one call per round at most, and every check is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import Field

from debate_engine.calls.schemas import (
    Bounded,
    answer_schema,
    choice_field,
    score_field,
    text_field,
)
from debate_engine.graph.state import ConversationState
from debate_engine.memory import count_tokens, make_budget, truncate_to_tokens
from debate_engine.memory.budget import BudgetSplit
from debate_engine.nodes.calls import Call, Reply
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.status import emit
from debate_engine.nodes.verdict import final_positions
from debate_engine.nodes.views import agent_call
from debate_engine.prompts import load_prompt, render

QUALITY_THRESHOLD = 8
"""The score that stops a ``quality`` debate when the config names none: "strong" on the rubric."""
REASON_CHARS = 200
"""What the schema asks the judge's reason to fit; a longer reason was paid for and is kept whole."""


def _rule(state: ConversationState) -> dict[str, Any]:
    return state["settings"].get("stop_rule") or {"type": "fixed"}


def min_round(rule: dict[str, Any]) -> int:
    """Return the first round after which the rule may stop the debate (``terminationCondition.minRound``).

    A rule that names none (settings written by hand) takes the config's
    defaults: 1 for ``quality``, which scores every round, 2 for ``convergence``.
    """
    return int(rule.get("min_round") or (1 if rule["type"] == "quality" else 2))


def due(state: ConversationState) -> bool:
    """Whether the round that just ended gets a judge's check: never after the last round, nor twice.

    Never before ``min_round`` either, whatever the rule: a check there could not
    stop the debate, so it would be a call paid for nothing.
    """
    rule, round_no = _rule(state), state["round"]
    if (
        state.get("stopped")
        or state["phase"] != "refine"
        or round_no >= state["settings"]["rounds"]
    ):
        return False
    if any(a["round"] == round_no for a in state.get("assessments") or []):
        return False
    if rule["type"] not in ("quality", "convergence") or round_no < min_round(rule):
        return False
    if rule["type"] == "quality":
        return True
    held = [t["position"] for t in final_positions(state).values()]
    every = len(held) == len(
        state["settings"]["agents"]
    )  # a seat with no position: only the judge can compare
    return not every or not all(
        p.get("answer") for p in held
    )  # short answers: compared exactly, no call


@lru_cache(maxsize=64)
def assessment_schema(kind: str, agents: tuple[str, ...]) -> type[Bounded]:
    """Return the judge's answer: the best proposal and its score, or whether the agents converged."""
    reason = text_field("Why, in one sentence.", REASON_CHARS)
    if kind == "quality":
        return answer_schema(
            "QualityCheck",
            "The best current proposal and its rubric score.",
            best=choice_field("The id of the agent whose proposal is best.", list(agents)),
            score=score_field("The best proposal's overall score by the rubric."),
            reason=reason,
        )
    return answer_schema(
        "ConvergenceCheck",
        "Whether the debate has converged.",
        converged=(
            bool,
            Field(
                description="True when every agent holds the same position, or "
                "another round would change nothing that matters."
            ),
        ),
        reason=reason,
    )


def _material(state: ConversationState, room: int) -> str:
    """Every agent's current position and proposal, each cut to an equal share of ``room`` tokens."""
    finals = {
        t["speaker"]: t for t in state["transcript"] if t["kind"] in ("proposal", "refinement")
    }
    share = max(32, room // max(1, len(finals)))
    blocks = []
    for agent, turn in finals.items():
        stated = turn.get("position") or {}
        head = f"{agent} ({turn['role']})" + (
            f", position: {stated['position']}" if stated.get("position") else ""
        )
        blocks.append(f"{head}\n{truncate_to_tokens(turn['content'], share)}")
    return "\n\n".join(blocks)


def plan(state: ConversationState) -> list[Call]:
    """One structured call to the judge over the round's proposals (nothing else: they are what is judged)."""
    settings, round_no = state["settings"], state["round"]
    judge, kind = settings["judge"], _rule(state)["type"]
    emit(
        {
            "event": "phase_started",
            "phase": "assess",
            "round": round_no,
            "rounds": settings["rounds"],
        }
    )
    budget = make_budget(
        judge["context_window"], judge["max_output_tokens"], BudgetSplit(1.0, 0.0, 0.0)
    )
    parts = {"problem": truncate_to_tokens(state["problem"], budget.total // 8), "round": round_no}
    if kind == "quality":
        parts["rubric"] = load_prompt("phases/rubric")
    template = load_prompt(f"phases/assess_{kind}")
    room = (
        budget.total
        - count_tokens(judge["system_prompt"])
        - count_tokens(render(template, **parts, proposals=""))
    )
    ask = render(
        template, **parts, proposals=_material(state, room - 64 - 8 * len(settings["agents"]))
    )
    alone: ConversationState = {**state, "transcript": [], "summary_log": []}
    schema = assessment_schema(kind, tuple(a["id"] for a in settings["agents"]))
    return [
        agent_call(
            alone,
            judge,
            None,
            kind="assessment",
            round_no=round_no,
            task=ask,
            schema=schema,
            budget=budget,
        )
    ]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Record the check; stop the debate when the agents converged or the best proposal scored high enough.

    A score names a proposal: one given for no agent of the debate (a choice the schema dropped, or none)
    is recorded and stops nothing.
    """
    rule, round_no, reply = _rule(state), state["round"], replies[0]
    parsed = reply["parsed"] or {}
    record: dict[str, Any] = {
        "round": round_no,
        "rule": rule["type"],
        "model": reply["model"],
        "reason": str(parsed.get("reason") or reply["content"]),
    }
    if rule["type"] == "quality":
        threshold = rule.get("threshold") or QUALITY_THRESHOLD
        score = parsed.get("score")
        agents = {a["id"] for a in state["settings"]["agents"]}
        best = parsed.get("best") if parsed.get("best") in agents else None
        record |= {
            "best": best,
            "score": score,
            "threshold": threshold,
            "stop": best is not None and isinstance(score, int) and score >= threshold,
        }
    else:
        record |= {
            "converged": parsed.get("converged") is True,
            "stop": parsed.get("converged") is True,
        }
    emit({"event": "assessment", **record})
    update: dict[str, Any] = {"assessments": [record]}
    if record["stop"]:
        stopped = "quality" if rule["type"] == "quality" else "convergence"
        why = (
            f"{record['best']}'s proposal scored {record['score']} (threshold {record['threshold']:g}): "
            if stopped == "quality"
            else "the judge found the agents converged: "
        ) + record["reason"]
        emit(
            {
                "event": "converged" if stopped == "convergence" else "quality_reached",
                "round": round_no,
                "reason": why,
            }
        )
        update |= {
            "stopped": stopped,
            "stop_reason": {"round": round_no, "reason": why, "by": "judge"},
        }
    return update


assess = phase_node("assess", plan, apply)
