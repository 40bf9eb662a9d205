"""Set the debate up: fix the roster and plan, and plan the clarifying questions."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import ConversationState
from nodes._shared import agent_task, emit, plan_of
from prompts import load_prompt, render


def setup(state: ConversationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Resolve the run's settings into the state; ask for questions when clarifying."""
    problem = (state.get("problem") or "").strip()
    if not problem:
        raise ValueError("the problem is empty; pass {'problem': '...'}")
    plan = plan_of(runtime)
    update: dict[str, Any] = {
        "problem": problem,
        "agents": list(plan.agents),
        "judge": plan.judge,
        "rounds": plan.rounds,
        "round": 0,
        "phase": "setup",
        "solution": None,
        "judge_summary": None,
    }
    tasks = []
    if plan.clarify and plan.max_questions > 0:
        seeded = {**state, **update}
        for agent in plan.agents:
            ask = render(
                load_prompt("phases/clarify"), problem=problem, role=agent["role"], max_questions=plan.max_questions
            )
            task = agent_task(seeded, plan, agent, node="clarify", kind="clarification", task=ask, round_no=0)  # type: ignore[arg-type]
            tasks.append({**task, "extra": {"max_questions": plan.max_questions}})
    emit({"event": "debate_started", "agents": [a["id"] for a in plan.agents], "rounds": plan.rounds})
    return {**update, "tasks": tasks}
