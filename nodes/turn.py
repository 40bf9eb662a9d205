"""A roundtable turn: one speaker adds one contribution, seeing the shared summary and the recent turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.briefing import briefing_for
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.positions import positions_event, with_changes
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.views import agent_call, reply_length, table_summary
from debate_engine.prompts import load_prompt, render


def speaker_of(state: ConversationState, turn_no: int) -> str:
    """Who speaks at ``turn_no``: the moderator's choice, else the next in round-robin order."""
    agents = state["settings"]["agents"]
    chosen = state.get("current_speaker")
    if chosen and any(a["id"] == chosen for a in agents):
        return chosen
    return agents[(turn_no - 1) % len(agents)]["id"]


def plan(state: ConversationState) -> list[Call]:
    """One call: the speaker's view of the shared summary and the turns it does not cover."""
    _, turn_no = next_step(state)
    settings = state["settings"]
    speaker = speaker_of(state, turn_no)
    profile = next(a for a in settings["agents"] if a["id"] == speaker)
    task = render(
        load_prompt("phases/turn"),
        turn=turn_no,
        length=reply_length(profile["max_output_tokens"]),
        max_turns=settings["roundtable"]["max_turns"],
        role=profile["role"],
    )
    summary = table_summary(state)
    return [agent_call(state, profile, summary, kind="message", round_no=turn_no, task=task)]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Append the turn; the moderator (if any) chooses afresh for the next one."""
    _, turn_no = next_step(state)
    turns = with_changes(state, record_turns(state, calls, replies))
    emit(positions_event(state, turns, turn_no))
    if turn_no < state["settings"]["roundtable"]["max_turns"]:
        turns += briefing_for(state, turn_no + 1, len(state["transcript"]) + len(turns))
    return {
        "transcript": turns,
        "turn_count": turn_no,
        "round": turn_no,
        "phase": "turn",
        "current_speaker": None,
        "status": advance(state, "turn", turn_no, turns),
    }


turn = phase_node("turn", plan, apply)
