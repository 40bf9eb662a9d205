"""Routers: pure functions of the state, typed so Studio can draw every edge.

Planner nodes put their tasks in ``state["tasks"]``; a router only turns
them into ``Send``s, or names the next planner when there is nothing to send.
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from graph.state import ConversationState


def send_tasks(state: ConversationState) -> list[Send]:
    """One ``Send`` per planned task, to the worker the task names."""
    return [Send(task["node"], task) for task in state.get("tasks", [])]


def after_setup(state: ConversationState) -> list[Send] | Literal["plan_round"]:
    """Ask for clarifications when they were planned, else start the rounds."""
    return send_tasks(state) or "plan_round"


def after_plan_round(state: ConversationState) -> list[Send] | Literal["plan_proposals", "synthesize"]:
    """Summarize the perspectives whose trigger fired, else go on."""
    return send_tasks(state) or after_summaries(state)


def after_summaries(state: ConversationState) -> Literal["plan_proposals", "synthesize"]:
    """Another round, or the judge when every round has run."""
    return "synthesize" if state["round"] >= state["rounds"] else "plan_proposals"


def after_plan_proposals(state: ConversationState) -> list[Send] | Literal["plan_critiques"]:
    """Round 1 proposes; later rounds carried proposals over and go to critique."""
    return send_tasks(state) or "plan_critiques"


def after_plan_critiques(state: ConversationState) -> list[Send] | Literal["plan_refinements"]:
    """Critique, or refine straight away when a single agent has no one to critique."""
    return send_tasks(state) or "plan_refinements"
