"""The order of the debate's phases: a pure function of the state, shared by routers and nodes."""

from __future__ import annotations

from typing import Literal

from debate_engine.config.settings import AgentProfile, RunSettings
from debate_engine.graph.state import ConversationState

Step = Literal["vote", "propose", "critique", "refine", "turn", "moderate", "synthesize", "done"]
TABLE_ID = "table"
"""The roundtable's shared perspective: one rolling summary that every speaker is shown."""


def next_step(state: ConversationState) -> tuple[Step, int]:
    """Return the phase that runs next and its round.

    Round 1 proposes (an escalate debate votes instead: its votes are round
    1's proposals, and the router after the vote decides whether a debate
    follows); every round critiques (with two agents or more) and refines; a
    later round critiques the refinements of the round before. A round that
    starts with agents who never proposed (added at a fork) starts with their
    proposals.
    """
    phase, round_no = state["phase"], state["round"]
    many = len(state["settings"]["agents"]) > 1
    if state.get("stopped") and phase != "done":
        return "synthesize", round_no
    if state["settings"].get("protocol") == "roundtable":
        return _next_turn(state)
    if phase in ("setup", "clarify"):
        return ("vote" if state["settings"].get("escalate") else "propose"), 1
    if phase == "propose":
        return ("critique" if many else "refine"), round_no
    if phase == "critique":
        return "refine", round_no
    if phase == "refine":
        if round_no < state["settings"]["rounds"] and unproposed(state):
            return "propose", round_no + 1
        if round_no < state["settings"]["rounds"]:
            return ("critique" if many else "refine"), round_no + 1
        return "synthesize", round_no
    return "done", round_no


def unproposed(state: ConversationState) -> list[AgentProfile]:
    """Return the agents with no proposal or refinement yet: every agent before round 1, and those added at a fork.

    Walks back only until every agent is found: after a round, its refinements.
    """
    agents = state["settings"]["agents"]
    waiting = {a["id"] for a in agents}
    for turn in reversed(state.get("transcript") or []):
        if not waiting:
            break
        if turn["kind"] in ("proposal", "refinement"):
            waiting.discard(turn["speaker"])
    return [a for a in agents if a["id"] in waiting]


def step_key(step: Step, round_no: int) -> str:
    """How ``summarized_for`` names a step: summarize runs at most once before each."""
    return f"{round_no}:{step}"


def _next_turn(state: ConversationState) -> tuple[Step, int]:
    """Return the roundtable: turns until the last, each after the moderator's choice when it moderates."""
    params = state["settings"]["roundtable"]
    taken = state.get("turn_count", 0)
    if state["phase"] == "done":
        return "done", taken
    if taken >= params["max_turns"]:
        return "synthesize", taken
    if params["order"] == "moderator" and state["phase"] != "moderate":
        return "moderate", taken + 1
    return "turn", taken + 1


def table_profile(settings: RunSettings) -> AgentProfile:
    """Who keeps the roundtable's shared summary: the judge's model, with the roundtable's rhythm.

    Every ``summary_every`` turns the oldest turns are folded in and the newest
    ``summary_every`` stay verbatim (so 50 to 99 do, with the defaults, when
    they fit); the overflow rule folds earlier when the recent slice is full.
    """
    params = settings["roundtable"]
    every = params["summary_every"]
    rhythm = {
        "threshold": 0,
        "tokenLimit": 0,
        "triggerTokenRatio": 2.0,
        "everyNTurns": 2 * every,
        "minMessages": 1,
        "cooldownMessages": 0,
        "preserveRecent": every,
        "method": "rolling",
        "maxLength": max(200, params["view"]["summary"] * 3),
    }
    judge = settings["judge"]
    return AgentProfile(
        **{
            **judge,
            "id": TABLE_ID,
            "role": "table",
            "summarization": {**judge["summarization"], **rhythm},
        }
    )
