"""Clarifications: each agent asks its questions, then the user answers them.

``clarify`` runs once per agent (fan-out); ``collect_answers`` pauses the
graph with ``interrupt()`` until the user, Studio or the SDK resumes it with
the answers. An empty answer is recorded as such.
"""

from __future__ import annotations

import re
import time
from typing import Any

from langgraph.types import interrupt

from graph.state import AgentTask, Clarification, ConversationState
from memory import Turn, count_tokens
from nodes._shared import emit, speak

NO_ANSWER = "(no answer)"


def clarify(task: AgentTask) -> dict[str, Any]:
    """Ask one agent for its clarifying questions."""
    turn = speak(task)
    lines = [re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", line).strip() for line in turn["content"].splitlines()]
    questions = [q for q in lines if q and q.upper() != "NONE"][: task["extra"]["max_questions"]]
    return {"questions": [Clarification(agent_id=task["agent_id"], questions=questions, view=task["view"])]}


def _answers_for(resume: Any, agent_id: str, count: int) -> list[str]:
    """Accept ``{agent_id: [answers]}``, ``{agent_id: "text"}`` or one string for all."""
    value = resume.get(agent_id, "") if isinstance(resume, dict) else resume
    if isinstance(value, str):
        value = [value] + [""] * (count - 1)
    answers = [str(a).strip() for a in (value or [])][:count]
    return [a or NO_ANSWER for a in answers + [""] * (count - len(answers))]


def collect_answers(state: ConversationState) -> dict[str, Any]:
    """Interrupt for the user's answers and record each agent's questions and answers."""
    asked = [q for q in state.get("questions", []) if q["questions"]]
    if not asked:
        return {"questions": [], "phase": "clarify"}
    emit({"event": "clarifications_requested", "agents": [q["agent_id"] for q in asked]})
    resume = interrupt({"questions": [{"agent_id": q["agent_id"], "questions": q["questions"]} for q in asked]})
    by_id = {a["id"]: a for a in state["agents"]}
    turns = []
    for q in asked:
        answers = _answers_for(resume, q["agent_id"], len(q["questions"]))
        content = "\n".join(
            f"Q: {question}\nA: {answer}" for question, answer in zip(q["questions"], answers, strict=False)
        )
        turns.append(
            Turn(
                id=f"clarification:r0:{q['agent_id']}",
                round=0,
                kind="clarification",
                speaker=q["agent_id"],
                role=by_id[q["agent_id"]]["role"],
                target=None,
                content=content,
                tokens=count_tokens(content),
                model=by_id[q["agent_id"]]["model"],
                usage=None,
                latency_ms=0,
                view=q.get("view"),
                created_at=time.time(),
            )
        )
    return {"transcript": turns, "questions": [], "phase": "clarify"}
