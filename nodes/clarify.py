"""Clarifications: each agent asks its questions, then the user answers them.

The questions are asked concurrently as tasks; ``interrupt()`` then pauses
the graph until the user, Studio or the SDK resumes it with the answers. On
resume the node runs again from its start, and the finished question calls
come back from the checkpoint instead of being asked again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langgraph.types import interrupt

from debate_engine.config.settings import AgentProfile, is_human
from debate_engine.graph.state import ConversationState
from debate_engine.memory import new_turn
from debate_engine.nodes.calls import Call, Reply
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.status import advance
from debate_engine.nodes.views import agent_call, reply_length
from debate_engine.prompts import load_prompt, render

NO_ANSWER = "(no answer)"


def plan(state: ConversationState) -> list[Call]:
    """One call per agent for its clarifying questions (a person's seat asks none: it answers them)."""
    settings = state["settings"]
    return [
        agent_call(state, a, None, kind="clarification", round_no=0, task=task_of(state, a))
        for a in settings["agents"]
        if not is_human(a)
    ]


def task_of(state: ConversationState, agent: AgentProfile) -> str:
    """Return the built-in clarification task, or the agent's own (``clarificationPromptPath``) with the problem after it.

    An agent's own text is used as written (its braces are not placeholders); the
    problem, the question limit and the length follow it.
    """
    limit, length = state["settings"]["max_questions"], reply_length(agent["max_output_tokens"])
    own = agent.get("clarification_prompt")
    if own:
        return (
            f"{own}\n\nProblem:\n{state['problem']}\n\nAsk at most {limit} questions, one per line; write "
            f"NONE if nothing is unclear.\n\n{length}"
        )
    return render(
        load_prompt("phases/clarify"),
        problem=state["problem"],
        role=agent["role"],
        max_questions=limit,
        length=length,
    )


def questions_of(text: str, limit: int) -> list[str]:
    """Return the questions in a reply: one per line, list markers stripped, NONE meaning none."""
    lines = [re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", line).strip() for line in text.splitlines()]
    return [q for q in lines if q and q.upper().rstrip(".") != "NONE"][:limit]


def answers_for(resume: Any, agent_id: str, count: int) -> list[str]:
    """Accept ``{agent_id: [answers]}``, ``{agent_id: "text"}`` or one string for all."""
    value = resume.get(agent_id, "") if isinstance(resume, dict) else resume
    if isinstance(value, str):
        value = [value] + [""] * (count - 1)
    answers = [str(a).strip() for a in (value or [])][:count]
    return [a or NO_ANSWER for a in answers + [""] * (count - len(answers))]


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Ask the user (an interrupt) and record each agent's questions with the answers."""
    limit = state["settings"]["max_questions"]
    asked = [(c, r, questions_of(r["content"], limit)) for c, r in zip(calls, replies, strict=True)]
    asked = [(c, r, qs) for c, r, qs in asked if qs]
    update: dict[str, Any] = {"phase": "clarify", "questions": []}
    if not asked:
        return {**update, "status": advance(state, "clarify", 0)}
    resume = interrupt(
        {"questions": [{"agent_id": c.agent["id"], "questions": qs} for c, _, qs in asked]}
    )
    start = len(state.get("transcript", []))
    turns = []
    for i, (call, reply, qs) in enumerate(asked):
        answers = answers_for(resume, call.agent["id"], len(qs))
        content = "\n".join(f"Q: {q}\nA: {a}" for q, a in zip(qs, answers, strict=True))
        turns.append(
            new_turn(
                start + i,
                kind="clarification",
                round_no=0,
                speaker=call.agent["id"],
                role=call.agent["role"],
                content=content,
                model=call.agent["model"],
                usage=reply["usage"],
                latency_ms=reply["latency_ms"],
                view=call.view,
            )
        )
    return {**update, "transcript": turns, "status": advance(state, "clarify", 0, turns)}


clarify = phase_node("clarify", plan, apply)
