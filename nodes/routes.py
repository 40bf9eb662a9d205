"""Routers: pure functions of the state, typed so a unit test can call them with a plain dict.

Before each phase the debate goes through ``summarize`` when some speaker's
(or the judge's) summary trigger fires, at most once per phase. A phase that
the spend cap refused leads straight to the judge. An escalate debate's vote
leads to its settlement (no judge), its next window, or the debate. The
builder names, edge by edge, which of these destinations each node can reach
(its ``path_map``), so Studio draws only the real edges.
"""

from __future__ import annotations

from typing import Literal

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.assess import due as assessment_due
from debate_engine.nodes.escalate import ballot_of
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.summarize import due

Next = Literal[
    "clarify",
    "summarize",
    "vote",
    "settle",
    "propose",
    "critique",
    "refine",
    "assess",
    "turn",
    "moderate",
    "synthesize",
    "__end__",
]


def route(state: ConversationState) -> Next:
    """Return the next node: a summary when one is due, else the next phase."""
    step, _ = next_step(state)
    if step == "done":
        return "__end__"
    return "summarize" if due(state) else step


def after_setup(state: ConversationState) -> Next:
    """Ask for clarifications when configured, else start the first phase."""
    settings = state["settings"]
    if settings.get("clarify") and settings.get("max_questions", 0) > 0:
        return "clarify"
    return route(state)


def after_vote(state: ConversationState) -> Next:
    """Return the verdict when a window of the vote agreed, the next window while voters wait, else the debate.

    A vote the spend cap stopped goes to the judge with what was drawn, as a stopped debate does.
    """
    ballot = ballot_of(state)
    if ballot is not None and not state.get("stopped"):
        if ballot["outcome"] == "settled":
            return "settle"
        if ballot["outcome"] == "drawing":
            return "vote"
    return route(state)


def after_refine(state: ConversationState) -> Next:
    """Return the judge's check of the round when the stop rule asks for one, else the next phase."""
    return "assess" if assessment_due(state) else route(state)


def after_summarize(state: ConversationState) -> Next:
    """Return the step the summaries were made for."""
    step, _ = next_step(state)
    return "__end__" if step == "done" else step
