"""Proposals: in round 1 every agent proposes a solution to the problem."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.positions import positions_event
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.views import agent_call, reply_length, summaries_of
from debate_engine.prompts import load_prompt, render


def plan(state: ConversationState) -> list[Call]:
    """One proposal call per agent, in the settings' order."""
    agents = state["settings"]["agents"]
    summaries = summaries_of(state, agents)
    emit({"event": "phase_started", "phase": "propose", "round": 1, "rounds": state["settings"]["rounds"]})
    template = load_prompt("phases/propose")
    return [
        agent_call(state, a, summaries.get(a["id"]), kind="proposal", round_no=1,
                   task=render(template, role=a["role"],
                               length=reply_length(a["max_output_tokens"])))
        for a in agents
    ]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the proposals as turns."""
    turns = record_turns(state, calls, replies)
    emit(positions_event(state, turns, 1))
    return {"transcript": turns, "round": 1, "phase": "propose", "status": advance(state, "propose", 1, turns)}


propose = phase_node("propose", plan, apply)
