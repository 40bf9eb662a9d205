"""Synthesis: the judge turns the final round into one solution."""

from __future__ import annotations

import time
from typing import Any, cast

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graph.context import Context
from graph.models import chat_model
from graph.state import ConversationState, Solution
from memory import Turn, count_tokens, is_transport_error
from memory.summarizer import usage_of
from nodes._shared import agent_task, emit, plan_of
from prompts import load_prompt, render


class JudgeSolution(BaseModel):
    """The judge's synthesized solution."""

    description: str = Field(description="The solution, complete enough to build from.")
    key_decisions: list[str] = Field(default_factory=list, description="The main design decisions and why.")
    trade_offs: list[str] = Field(default_factory=list, description="What the solution gives up, and for what.")
    recommendations: list[str] = Field(default_factory=list, description="Concrete next steps.")
    open_risks: list[str] = Field(default_factory=list, description="Risks that remain open.")
    confidence: int = Field(ge=0, le=100, description="Confidence in the solution, 0 to 100.")
    confidence_reasons: str = Field(description="Why this confidence: what supports it, what undermines it.")


def synthesize(state: ConversationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask the judge for a structured solution, falling back to plain text."""
    emit({"event": "phase_started", "phase": "synthesize", "round": state["round"], "rounds": state["rounds"]})
    plan = plan_of(runtime)
    judge = state["judge"]
    summary_note = " and in the summary of them" if state.get("judge_summary") else ""
    ask = render(
        load_prompt("phases/synthesize"),
        problem=state["problem"],
        rounds=state["rounds"],
        participants=", ".join(f"{a['id']} ({a['role']})" for a in state["agents"]),
        summary_note=summary_note,
    )
    task = agent_task(state, plan, judge, node="synthesize", kind="synthesis", task=ask, round_no=state["round"])
    model = chat_model(
        judge["model"], temperature=judge["temperature"], max_tokens=plan.max_output_tokens, timeout_s=plan.timeout_s
    )
    messages = [SystemMessage(task["system"]), HumanMessage(task["user"])]
    started = time.perf_counter()
    solution, raw = _structured(model, messages)
    if solution is None:
        raw = model.invoke(messages)
        solution = Solution(
            description=str(raw.content).strip(),
            key_decisions=[],
            trade_offs=[],
            recommendations=[],
            open_risks=[],
            confidence=0,
            confidence_reasons="The model gave no structured answer; no confidence was stated.",
            structured=False,
        )
    content = render_solution(solution)
    turn = Turn(
        id=f"synthesis:r{state['round']}:judge",
        round=state["round"],
        kind="synthesis",
        speaker="judge",
        role="judge",
        target=None,
        content=content,
        tokens=count_tokens(content),
        model=judge["model"],
        usage=usage_of(raw),
        latency_ms=int((time.perf_counter() - started) * 1000),
        view=task["view"],
        created_at=time.time(),
    )
    emit(
        {
            "event": "contribution",
            "kind": "synthesis",
            "round": state["round"],
            "agent_id": "judge",
            "tokens": turn["tokens"],
        }
    )
    return {"solution": solution, "transcript": [turn], "phase": "done"}


def _structured(model: Any, messages: list[Any]) -> tuple[Solution | None, Any]:
    try:
        runnable = model.with_structured_output(JudgeSolution, method="function_calling", include_raw=True)
    except NotImplementedError:
        return None, None
    try:
        out = runnable.invoke(messages)
    except Exception as exc:
        if is_transport_error(exc):
            raise
        return None, None
    parsed = out.get("parsed")
    if parsed is None:
        return None, out.get("raw")
    return cast(Solution, {**parsed.model_dump(), "structured": True}), out.get("raw")


def render_solution(solution: Solution) -> str:
    """The solution as Markdown text, for the transcript and the terminal."""
    parts = [solution["description"]]
    for title, key in (
        ("Key decisions", "key_decisions"),
        ("Trade-offs", "trade_offs"),
        ("Recommendations", "recommendations"),
        ("Open risks", "open_risks"),
    ):
        items = solution[key]  # type: ignore[literal-required]
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {i}" for i in items))
    if solution["structured"]:
        parts.append(f"Confidence: {solution['confidence']}/100. {solution['confidence_reasons']}")
    return "\n\n".join(parts)
