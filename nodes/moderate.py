"""The roundtable's moderator: the judge picks the next speaker, says why, and may declare convergence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import Field

from debate_engine.calls.schemas import Bounded, answer_schema, choice_field, text_field
from debate_engine.graph.state import ConversationState, Moderation
from debate_engine.nodes.calls import Call, Reply
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.turn import speaker_of
from debate_engine.nodes.views import agent_call, table_summary
from debate_engine.prompts import load_prompt, render

MIN_TURNS_PER_AGENT = 2
"""Convergence counts only once every participant has spoken this many times."""


@lru_cache(maxsize=64)
def next_speaker_schema(agents: tuple[str, ...]) -> type[Bounded]:
    """Return the moderator's choice: one of the participants (an enum a grammar enforces), why, and whether to stop."""
    return answer_schema(
        "NextSpeaker",
        "The moderator's choice.",
        speaker=choice_field("The id of the participant who should speak next.", list(agents)),
        reason=text_field("Why this participant, in one sentence.", 200),
        converged=(
            bool,
            Field(
                description="True only when the participants agree and another turn would add "
                "nothing."
            ),
        ),
    )


def plan(state: ConversationState) -> list[Call]:
    """One structured call to the judge, over the same view the speakers have."""
    _, turn_no = next_step(state)
    settings = state["settings"]
    ask = render(
        load_prompt("phases/moderate"),
        turns_taken=turn_no - 1,
        participants=", ".join(f"{a['id']} ({a['role']})" for a in settings["agents"]),
    )
    summary = table_summary(state)
    return [
        agent_call(
            state,
            settings["judge"],
            summary,
            kind="moderation",
            round_no=turn_no,
            task=ask,
            schema=next_speaker_schema(tuple(a["id"] for a in settings["agents"])),
        )
    ]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Fix the next speaker (round-robin when the choice names nobody) and whether to stop."""
    _, turn_no = next_step(state)
    agents = [a["id"] for a in state["settings"]["agents"]]
    parsed = replies[0]["parsed"] or {}
    speaker = parsed.get("speaker") if parsed.get("speaker") in agents else None
    spoken = Counter(t["speaker"] for t in state.get("transcript", []) if t["kind"] == "message")
    enough = all(spoken[a] >= MIN_TURNS_PER_AGENT for a in agents)
    converged = bool(parsed.get("converged")) and enough
    fallback = speaker_of({**state, "current_speaker": None}, turn_no)
    choice = Moderation(
        turn=turn_no,
        speaker=speaker or fallback,
        converged=converged,
        reason=str(parsed.get("reason") or replies[0]["content"]),  # paid for: kept whole
    )
    emit({"event": "moderation", **choice})
    update: dict[str, Any] = {
        "current_speaker": choice["speaker"],
        "moderation": choice,
        "phase": "moderate",
        "status": advance(state, "moderate", turn_no - 1),
    }
    if converged:
        update["stopped"] = "convergence"
        update["stop_reason"] = {"round": turn_no - 1, "reason": choice["reason"]}
    return update


moderate = phase_node("moderate", plan, apply)
