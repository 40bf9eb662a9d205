"""Refinements: each agent answers the critiques it received with a better proposal."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import AgentTask, ConversationState
from nodes._shared import agent_task, emit, latest_of, plan_of, speak
from prompts import load_prompt, render


def plan_refinements(state: ConversationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Plan one refinement call per agent; its proposal is the task, its critiques the history."""
    round_no = state["round"]
    emit({"event": "phase_started", "phase": "refine", "round": round_no, "rounds": state["rounds"]})
    plan = plan_of(runtime)
    proposals = latest_of(state, "proposal", round_no)
    template = load_prompt("phases/refine")
    tasks = [
        agent_task(
            state,
            plan,
            agent,
            node="refine",
            kind="refinement",
            task=render(template, problem=state["problem"], proposal=proposals[agent["id"]]["content"]),
            round_no=round_no,
            exclude=[proposals[agent["id"]]["id"]],
        )
        for agent in state["agents"]
        if agent["id"] in proposals
    ]
    return {"phase": "refine", "tasks": tasks}


def refine(task: AgentTask) -> dict[str, Any]:
    """Write one agent's refined proposal."""
    return {"transcript": [speak(task)]}
