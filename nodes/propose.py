"""Proposals: in round 1 every agent proposes a solution to the problem; an agent added at a fork, in the fork's
first round."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.positions import positions_event
from debate_engine.nodes.schedule import next_step, unproposed
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.views import agent_call, reply_length, summaries_of
from debate_engine.prompts import load_prompt, render


def plan(state: ConversationState) -> list[Call]:
    """One proposal call per agent that has none yet, in the settings' order."""
    _, round_no = next_step(state)
    agents = unproposed(state)
    summaries = summaries_of(state, agents)
    emit(
        {
            "event": "phase_started",
            "phase": "propose",
            "round": round_no,
            "rounds": state["settings"]["rounds"],
        }
    )
    template = load_prompt("phases/propose")
    return [
        agent_call(
            state,
            a,
            summaries.get(a["id"]),
            kind="proposal",
            round_no=round_no,
            task=render(template, role=a["role"], length=reply_length(a["max_output_tokens"])),
        )
        for a in agents
    ]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the proposals as turns."""
    _, round_no = next_step(state)
    turns = record_turns(state, calls, replies)
    emit(positions_event(state, turns, round_no))
    return {
        "transcript": turns,
        "round": round_no,
        "phase": "propose",
        "status": advance(state, "propose", round_no, turns),
    }


propose = phase_node("propose", plan, apply)
