"""Proposals: each agent proposes in round 1; later rounds carry refinements over.

From round 2 on an agent's proposal is its previous refinement, copied
without a model call, as in the seed system.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import AgentTask, ConversationState
from memory import Turn
from nodes._shared import agent_task, emit, latest_of, plan_of, speak
from prompts import load_prompt, render


def plan_proposals(state: ConversationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Open a round: plan one proposal call per agent, or carry refinements over."""
    round_no = state["round"] + 1
    emit({"event": "phase_started", "phase": "propose", "round": round_no, "rounds": state["rounds"]})
    if round_no > 1:
        refined = latest_of(state, "refinement", round_no - 1)
        carried = [
            Turn(
                **{
                    **refined[a["id"]],
                    "id": f"proposal:r{round_no}:{a['id']}",
                    "kind": "proposal",
                    "round": round_no,
                    "model": None,
                    "usage": None,
                    "view": None,
                    "latency_ms": 0,
                    "created_at": time.time(),
                    "carried_from": refined[a["id"]]["id"],
                }
            )
            for a in state["agents"]
            if a["id"] in refined
        ]
        return {"round": round_no, "phase": "propose", "tasks": [], "transcript": carried}
    plan = plan_of(runtime)
    seeded = {**state, "round": round_no}
    tasks = [
        agent_task(
            seeded,  # type: ignore[arg-type]
            plan,
            agent,
            node="propose",
            kind="proposal",
            task=render(load_prompt("phases/propose"), problem=state["problem"], role=agent["role"]),
            round_no=round_no,
        )
        for agent in state["agents"]
    ]
    return {"round": round_no, "phase": "propose", "tasks": tasks}


def propose(task: AgentTask) -> dict[str, Any]:
    """Write one agent's proposal."""
    return {"transcript": [speak(task)]}
