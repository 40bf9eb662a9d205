"""Refinements: each agent answers the critiques it received with a better proposal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.config.settings import AgentProfile
from debate_engine.graph.state import ConversationState
from debate_engine.memory import SummaryRecord
from debate_engine.nodes.briefing import briefing_for
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.positions import converged, positions_event, with_changes
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.views import agent_call, latest_position, reply_length, summaries_of
from debate_engine.prompts import load_prompt, render


def plan(state: ConversationState) -> list[Call]:
    """One call per agent: the critiques of its current proposal are its newest history, the refinement its task."""
    _, round_no = next_step(state)
    agents = state["settings"]["agents"]
    emit(
        {
            "event": "phase_started",
            "phase": "refine",
            "round": round_no,
            "rounds": state["settings"]["rounds"],
        }
    )
    summaries = summaries_of(state, agents)
    return [refine_call(state, agent, summaries.get(agent["id"]), round_no) for agent in agents]


def refine_call(
    state: ConversationState, agent: AgentProfile, summary: SummaryRecord | None, round_no: int
) -> Call:
    """Return the task names the agent's current proposal where its history shows it, and quotes it only where not.

    Kept in place, the proposal leaves the history a prefix of the next round's (a cache hit at the provider);
    quoted, it would have to come out of the middle of the history.
    """
    template, seq = load_prompt("phases/refine"), latest_position(state, agent["id"])
    length = reply_length(agent["max_output_tokens"])
    position = state["transcript"][seq] if seq is not None else None
    where = (
        f"your {position['kind']} of round {position['round']}, in your history above."
        if position
        else ""
    )
    call = agent_call(
        state,
        agent,
        summary,
        kind="refinement",
        round_no=round_no,
        task=render(template, proposal=where, length=length),
    )
    if position is not None and seq is not None and seq >= call.view["from_seq"]:
        return call
    quoted = f"\n\n{position['content']}" if position else "(no proposal yet)"
    return agent_call(
        state,
        agent,
        summary,
        kind="refinement",
        round_no=round_no,
        task=render(template, proposal=quoted, length=length),
    )


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the refinements as turns; the round is complete."""
    _, round_no = next_step(state)
    turns = with_changes(state, record_turns(state, calls, replies))
    emit(positions_event(state, turns, round_no))
    if round_no < state["settings"]["rounds"]:
        turns += briefing_for(state, round_no + 1, len(state["transcript"]) + len(turns))
    update = {
        "transcript": turns,
        "round": round_no,
        "phase": "refine",
        "status": advance(state, "refine", round_no, turns),
    }
    stop = converged(state, turns, round_no)
    if stop:
        emit({"event": "converged", **stop})
        update |= {"stopped": "convergence", "stop_reason": stop}
    return update


refine = phase_node("refine", plan, apply)
