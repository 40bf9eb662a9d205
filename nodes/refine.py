"""Refinements: each agent answers the critiques it received with a better proposal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.briefing import briefing_for
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.positions import converged, positions_event, with_changes
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.views import agent_call, latest_position, reply_length, summaries_of
from debate_engine.prompts import load_prompt, render


def plan(state: ConversationState) -> list[Call]:
    """One call per agent: its current proposal is the task, the critiques of it are its history."""
    _, round_no = next_step(state)
    agents = state["settings"]["agents"]
    emit({"event": "phase_started", "phase": "refine", "round": round_no, "rounds": state["settings"]["rounds"]})
    summaries = summaries_of(state, agents)
    template = load_prompt("phases/refine")
    calls = []
    for agent in agents:
        seq = latest_position(state, agent["id"])
        proposal = state["transcript"][seq]["content"] if seq is not None else "(no proposal yet)"
        calls.append(agent_call(
            state, agent, summaries.get(agent["id"]), kind="refinement", round_no=round_no, exclude=seq,
            task=render(template, problem=state["problem"], proposal=proposal,
                        length=reply_length(agent["max_output_tokens"])),
        ))
    return calls


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the refinements as turns; the round is complete."""
    _, round_no = next_step(state)
    turns = with_changes(state, record_turns(state, calls, replies))
    emit(positions_event(state, turns, round_no))
    if round_no < state["settings"]["rounds"]:
        turns += briefing_for(state, round_no + 1, len(state["transcript"]) + len(turns))
    update = {"transcript": turns, "round": round_no, "phase": "refine",
              "status": advance(state, "refine", round_no, turns)}
    stop = converged(state, turns, round_no)
    if stop:
        emit({"event": "converged", **stop})
        update |= {"stopped": "convergence", "stop_reason": stop}
    return update


refine = phase_node("refine", plan, apply)
