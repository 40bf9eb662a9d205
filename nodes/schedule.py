"""The order of the debate's phases: a pure function of the state, shared by routers and nodes."""

from __future__ import annotations

from typing import Literal

from debate_engine.graph.state import ConversationState

Step = Literal["propose", "critique", "refine", "synthesize", "done"]


def next_step(state: ConversationState) -> tuple[Step, int]:
    """The phase that runs next and its round.

    Round 1 proposes; every round critiques (with two agents or more) and
    refines; a later round critiques the refinements of the round before.
    """
    phase, round_no = state["phase"], state["round"]
    many = len(state["settings"]["agents"]) > 1
    if state.get("stopped") and phase != "done":
        return "synthesize", round_no
    if phase in ("setup", "clarify"):
        return "propose", 1
    if phase == "propose":
        return ("critique" if many else "refine"), round_no
    if phase == "critique":
        return "refine", round_no
    if phase == "refine":
        if round_no < state["settings"]["rounds"]:
            return ("critique" if many else "refine"), round_no + 1
        return "synthesize", round_no
    return "done", round_no


def step_key(step: Step, round_no: int) -> str:
    """How ``summarized_for`` names a step: summarize runs at most once before each."""
    return f"{round_no}:{step}"
