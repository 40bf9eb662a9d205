"""The vote an escalate debate starts with, and its settlement when the vote agrees.

``vote`` asks the next window of voters for their answers: round 1's proposals, made as the propose phase
makes them (tasks on the call road, the spend cap's gate, resume). A voter never sees another voter's
answer (an agent's perspective holds only its own proposals), so every vote is independent, whatever the
window. ``settle`` records an agreeing window's answer as the verdict, as the sample protocol's tally does:
no judge is asked and no debate is paid. What the vote decided is read from the transcript
(``nodes.escalate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.calls import Call, Reply
from debate_engine.nodes.escalate import ballot_of
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.propose import apply as propose_apply
from debate_engine.nodes.propose import plan as propose_plan
from debate_engine.nodes.status import emit
from debate_engine.nodes.tally import tally_votes


def plan(state: ConversationState) -> list[Call]:
    """One proposal call per voter of the next window: the first voters still to answer, in their order."""
    return propose_plan(state)[: state["settings"]["escalate"]["window"]]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the window's answers as round 1's proposals, and say what the vote stands at."""
    update = propose_apply(state, calls, replies)
    drawn = cast(
        ConversationState, {**state, "transcript": [*state["transcript"], *update["transcript"]]}
    )
    ballot = ballot_of(drawn)
    if ballot is not None:
        emit({"event": "vote", **ballot})
    return update


vote = phase_node("vote", plan, apply)


def settle(state: ConversationState) -> dict[str, Any]:
    """Record the agreeing window's answer as the solution, marked as the vote's; the debate is done."""
    update = tally_votes(state)
    solution = update["solution"]
    outcome = solution["verdict"]
    mark = outcome["ballot"]["mark"]
    emit(
        {
            "event": "settled",
            "mark": mark,
            "position": outcome["position"],
            "answer": outcome["answer"],
        }
    )
    # Not the judge's plain text: a record of the vote, with the agreement as its confidence.
    update["solution"] = {
        **solution,
        "description": f"{outcome['position']} ({mark})",
        "confidence": outcome["confidence"]["value"] or 0,
        "confidence_reasons": f"{mark[0].upper()}{mark[1:]}: no judge was asked, no debate was paid.",
        "structured": True,
    }
    return update
