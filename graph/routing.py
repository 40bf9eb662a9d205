"""Routers: pure functions of the state, typed so Studio can draw every edge.

Before each phase the debate goes through ``summarize`` when some speaker's
(or the judge's) summary trigger fires, at most once per phase. A phase that
the spend cap refused leads straight to the judge.
"""

from __future__ import annotations

from typing import Literal, cast

from debate_engine.graph.state import ConversationState
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.summarize import due

Next = Literal["summarize", "propose", "critique", "refine", "turn", "moderate", "synthesize", "__end__"]


def route(state: ConversationState) -> Next:
    """The next node: a summary when one is due, else the next phase."""
    step, _ = next_step(state)
    if step == "done":
        return "__end__"
    return "summarize" if due(state) else step


def after_setup(state: ConversationState) -> Literal["clarify", "summarize", "propose"]:
    """Ask for clarifications when configured, else start round 1."""
    settings = state["settings"]
    if settings["clarify"] and settings["max_questions"] > 0:
        return "clarify"
    return cast(Literal["summarize", "propose"], route(state))


def after_clarify(state: ConversationState) -> Literal["summarize", "propose", "synthesize"]:
    """Round 1 follows the answers (the judge, when the spend cap stopped the debate)."""
    return cast(Literal["summarize", "propose", "synthesize"], route(state))


def after_summarize(state: ConversationState) -> Literal["propose", "critique", "refine", "synthesize"]:
    """The phase the summaries were made for."""
    step, _ = next_step(state)
    return cast(Literal["propose", "critique", "refine", "synthesize"], step)


def after_propose(state: ConversationState) -> Literal["summarize", "critique", "refine", "synthesize"]:
    """Critique the proposals (a single agent refines at once; the judge when the spend cap stopped it)."""
    return cast(Literal["summarize", "critique", "refine", "synthesize"], route(state))


def after_critique(state: ConversationState) -> Literal["summarize", "refine", "synthesize"]:
    """Refine in answer to the critiques (the judge, when the spend cap stopped the debate)."""
    return cast(Literal["summarize", "refine", "synthesize"], route(state))


def after_refine(state: ConversationState) -> Literal["summarize", "critique", "refine", "synthesize"]:
    """Another round, or the judge when every round has run."""
    return cast(Literal["summarize", "critique", "refine", "synthesize"], route(state))


def after_setup_roundtable(state: ConversationState) -> Literal["summarize", "moderate", "turn"]:
    """The first turn (after the moderator's choice, when it moderates)."""
    return cast(Literal["summarize", "moderate", "turn"], route(state))


def after_summarize_roundtable(state: ConversationState) -> Literal["moderate", "turn", "synthesize"]:
    """The step the shared summary was brought up to date for."""
    step, _ = next_step(state)
    return cast(Literal["moderate", "turn", "synthesize"], step)


def after_moderate(state: ConversationState) -> Literal["summarize", "turn", "synthesize"]:
    """The chosen speaker's turn, or the judge when the moderator declared convergence."""
    return cast(Literal["summarize", "turn", "synthesize"], route(state))


def after_turn(state: ConversationState) -> Literal["summarize", "moderate", "turn", "synthesize"]:
    """The next turn, or the judge after the last one."""
    return cast(Literal["summarize", "moderate", "turn", "synthesize"], route(state))
