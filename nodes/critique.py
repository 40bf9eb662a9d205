"""Critiques: every agent critiques every other agent's proposal of the round."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import AgentTask, ConversationState
from nodes._shared import agent_task, emit, latest_of, plan_of, speak
from prompts import load_prompt, render


def plan_critiques(state: ConversationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Plan N x (N-1) critique calls; none with a single agent."""
    round_no = state["round"]
    agents = state["agents"]
    if len(agents) < 2:
        return {"phase": "critique", "tasks": []}
    emit({"event": "phase_started", "phase": "critique", "round": round_no, "rounds": state["rounds"]})
    plan = plan_of(runtime)
    proposals = latest_of(state, "proposal", round_no)
    template = load_prompt("phases/critique")
    tasks = [
        agent_task(
            state,
            plan,
            critic,
            node="critique",
            kind="critique",
            target=target["id"],
            task=render(
                template,
                problem=state["problem"],
                role=critic["role"],
                target=target["id"],
                target_role=target["role"],
                proposal=proposals[target["id"]]["content"],
            ),
            round_no=round_no,
        )
        for critic in agents
        for target in agents
        if critic["id"] != target["id"] and target["id"] in proposals
    ]
    return {"phase": "critique", "tasks": tasks}


def critique(task: AgentTask) -> dict[str, Any]:
    """Write one critique of one proposal."""
    return {"transcript": [speak(task)]}
