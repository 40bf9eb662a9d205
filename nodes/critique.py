"""Critiques: every agent critiques every other agent's current proposal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.views import agent_call, latest_position, reply_length, summaries_of
from debate_engine.prompts import load_prompt, render


def plan(state: ConversationState) -> list[Call]:
    """N x (N-1) calls: each critic on each other agent's newest proposal or refinement."""
    _, round_no = next_step(state)
    agents = state["settings"]["agents"]
    emit(
        {
            "event": "phase_started",
            "phase": "critique",
            "round": round_no,
            "rounds": state["settings"]["rounds"],
        }
    )
    summaries = summaries_of(state, agents)
    positions = {a["id"]: latest_position(state, a["id"]) for a in agents}
    template = load_prompt("phases/critique")
    transcript = state["transcript"]
    return [
        agent_call(
            state,
            critic,
            summaries.get(critic["id"]),
            kind="critique",
            round_no=round_no,
            target=target["id"],
            task=render(
                template,
                role=critic["role"],
                target=target["id"],
                length=reply_length(critic["max_output_tokens"]),
                target_role=target["role"],
                proposal=transcript[seq]["content"],
            ),
        )
        for critic in agents
        for target in agents
        if critic["id"] != target["id"] and (seq := positions[target["id"]]) is not None
    ]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the critiques as turns."""
    _, round_no = next_step(state)
    turns = record_turns(state, calls, replies)
    return {
        "transcript": turns,
        "round": round_no,
        "phase": "critique",
        "status": advance(state, "critique", round_no, turns),
    }


critique = phase_node("critique", plan, apply)
