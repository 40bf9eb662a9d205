"""The conditional summarize step, at the start of each round and before synthesis.

``plan_round`` asks ``memory`` whose trigger fires and plans one summary per
such agent (or the judge); ``summarize`` runs one. The rules live in
``memory``; this module only wires them to the graph.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.models import chat_model, provider_of
from graph.state import AgentProfile, AgentTask, ConversationState
from memory import (
    JUDGE_ID,
    Budget,
    ModelInfo,
    Plan,
    SummarizationSettings,
    SummaryRequest,
    Turn,
    decide,
    get_strategy,
    latest_summary,
    perspective_for,
    uncovered,
)
from memory import (
    summarize as run_summary,
)
from nodes._shared import budget_of, emit, plan_of
from prompts import load_prompt, read_prompt_file, render

SUMMARY_TEMPERATURE_CAP = 0.3


class SummarizationAborted(RuntimeError):
    """A summary failed and the settings say to stop (``abortOnFailure``)."""


def plan_round(state: ConversationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decide which perspectives to summarize before the next round or the synthesis."""
    plan = plan_of(runtime)
    finishing = state["round"] >= state["rounds"]
    who = [state["judge"]] if finishing else state["agents"]
    tasks = [t for t in (_summary_task(state, budget_of(p, plan), p) for p in who) if t is not None]
    return {"tasks": tasks, "phase": "synthesize" if finishing else "summarize"}


def _summary_task(state: ConversationState, budget: Budget, profile: AgentProfile) -> AgentTask | None:
    settings = SummarizationSettings.model_validate(profile["summarization"])
    agent_id = profile["id"]
    perspective = perspective_for(state.get("transcript", []), agent_id, state["rounds"])
    previous = latest_summary(state.get("summary_log", []), agent_id)
    decision = decide(uncovered(perspective, previous), previous, settings, budget.history)
    if not decision.fire:
        return None
    strategy = get_strategy(settings.method)
    material = strategy.plan(perspective, previous, settings.preserve_recent)
    turns: list[Turn] = []
    room = budget.total
    for turn in reversed(material.turns):  # what one call can read: newest first
        room -= turn["tokens"] + 16
        if room < 0:
            break
        turns.insert(0, turn)
    if not turns:
        return None
    who = (
        "the judge (the final round's proposals and refinements)"
        if agent_id == JUDGE_ID
        else f"the {profile['role']} agent {agent_id}"
    )
    system = (
        read_prompt_file(profile["summary_prompt_path"], f"summaryPromptPath of {agent_id}")
        or read_prompt_file(settings.prompt_path, "summarization.promptPath")
        or render(load_prompt("phases/summarize"), who=who, max_length=settings.max_length)
    )
    fold_note = " and fold the previous summary into the new one" if material.fold else ""
    return AgentTask(
        node="summarize",
        agent_id=agent_id,
        role=profile["role"],
        kind="summary",
        round=state["round"] + (0 if state["round"] >= state["rounds"] else 1),
        target=None,
        model=profile["model"],
        temperature=min(profile["temperature"], SUMMARY_TEMPERATURE_CAP),
        max_tokens=budget.summary,
        timeout_s=120,
        system=system,
        user=render(load_prompt("phases/summarize_task"), fold_note=fold_note),
        view=None,
        extra={
            "fold": material.fold,
            "turns": turns,
            "depth": material.depth,
            "parent_id": material.parent_id,
            "settings": profile["summarization"],
            "strategy": strategy.name,
            "reason": decision.reason,
            "budget": asdict(budget),
        },
    )


def summarize(task: AgentTask) -> dict[str, Any]:
    """Summarize one perspective; a failure is recorded and the debate goes on."""
    extra = task["extra"]
    settings = SummarizationSettings.model_validate(extra["settings"])
    model = chat_model(task["model"], temperature=task["temperature"], max_tokens=task["max_tokens"])
    record = run_summary(
        model,
        ModelInfo(spec=task["model"], provider=provider_of(task["model"]), temperature=task["temperature"]),
        SummaryRequest(
            agent_id=task["agent_id"],
            role=task["role"],
            round=task["round"],
            reason=extra["reason"],
            strategy=extra["strategy"],
            plan=Plan(fold=extra["fold"], turns=extra["turns"], depth=extra["depth"], parent_id=extra["parent_id"]),
            settings=settings,
            budget=Budget(**extra["budget"]),
            system_prompt=task["system"],
            instruction=task["user"],
        ),
        emit=emit,
    )
    if record["status"] == "failed" and settings.abort_on_failure:
        raise SummarizationAborted(f"summarizing {task['agent_id']} failed ({record['error']}); abortOnFailure is set")
    update: dict[str, Any] = {"summary_log": [record]}
    if record["status"] == "ok":
        if task["agent_id"] == JUDGE_ID:
            update["judge_summary"] = record
        else:
            update["summaries"] = {str(task["round"]): {task["agent_id"]: record}}
    return update
