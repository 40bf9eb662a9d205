"""Helpers every phase uses: the run's plan, an agent's view as a task, one model call.

Planner nodes turn state into ``AgentTask``s with :func:`agent_task`; worker
nodes turn a task into a ``Turn`` with :func:`speak`. No node imports another
node's module.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from graph.config import DebatePlan, resolve
from graph.context import Context
from graph.models import chat_model, context_window
from graph.state import AgentProfile, AgentTask, ConversationState
from memory import (
    Budget,
    SummarizationSettings,
    Turn,
    build_view,
    count_tokens,
    latest_summary,
    make_budget,
    perspective_for,
    uncovered,
    verbatim_limit,
)
from memory.summarizer import usage_of
from prompts import load_prompt, read_prompt_file


def plan_of(runtime: Runtime[Context]) -> DebatePlan:
    """The resolved settings of this run."""
    return resolve(runtime.context or Context())


def emit(event: dict[str, Any]) -> None:
    """Send a custom stream event; a no-op outside a streamed run."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer(event)


def budget_of(profile: AgentProfile, plan: DebatePlan) -> Budget:
    """The token budget of one agent's calls."""
    return make_budget(context_window(profile["model"], plan.context_window), plan.max_output_tokens)


def system_prompt(profile: AgentProfile) -> str:
    """The agent's custom system prompt if readable, else its role's built-in one."""
    custom = read_prompt_file(profile["system_prompt_path"], f"systemPromptPath of {profile['id']}")
    return custom or load_prompt(f"roles/{profile['role']}")


def agent_task(
    state: ConversationState,
    plan: DebatePlan,
    profile: AgentProfile,
    *,
    node: str,
    kind: str,
    task: str,
    round_no: int,
    target: str | None = None,
    exclude: Iterable[str] = (),
) -> AgentTask:
    """Build the budgeted prompt ``profile`` will answer, as a task for ``node``."""
    transcript = state.get("transcript", [])
    summary = latest_summary(state.get("summary_log", []), profile["id"])
    skip = set(exclude)
    history = [
        t
        for t in uncovered(perspective_for(transcript, profile["id"], state.get("rounds", round_no)), summary)
        if t["id"] not in skip
    ]
    budget = budget_of(profile, plan)
    settings = SummarizationSettings.model_validate(profile["summarization"])
    view = build_view(
        system_prompt=system_prompt(profile),
        task=task,
        summary=summary,
        turns=history,
        budget=budget,
        max_turns=verbatim_limit(history, summary, settings, budget.history),
    )
    return AgentTask(
        node=node,
        agent_id=profile["id"],
        role=profile["role"],
        kind=kind,
        round=round_no,
        target=target,
        model=profile["model"],
        temperature=profile["temperature"],
        max_tokens=plan.max_output_tokens,
        timeout_s=plan.timeout_s,
        system=view.system,
        user=view.user,
        view=view.record,
    )


def speak(task: AgentTask) -> Turn:
    """Send a task's prompt to its model and record the answer as a turn."""
    model = chat_model(
        task["model"], temperature=task["temperature"], max_tokens=task["max_tokens"], timeout_s=task["timeout_s"]
    )
    started = time.perf_counter()
    reply = model.invoke([SystemMessage(task["system"]), HumanMessage(task["user"])])
    latency_ms = int((time.perf_counter() - started) * 1000)
    content = str(reply.content).strip()
    target = task["target"]
    turn = Turn(
        id=f"{task['kind']}:r{task['round']}:{task['agent_id']}" + (f"->{target}" if target else ""),
        round=task["round"],
        kind=task["kind"],  # type: ignore[typeddict-item]
        speaker=task["agent_id"],
        role=task["role"],
        target=target,
        content=content,
        tokens=count_tokens(content),
        model=task["model"],
        usage=usage_of(reply),
        latency_ms=latency_ms,
        view=task["view"],
        created_at=time.time(),
    )
    emit(
        {
            "event": "contribution",
            "kind": turn["kind"],
            "round": turn["round"],
            "agent_id": turn["speaker"],
            "target": target,
            "tokens": turn["tokens"],
            "prompt_tokens": task["view"]["prompt_tokens"],
            "latency_ms": latency_ms,
        }
    )
    return turn


def profiles(state: ConversationState) -> dict[str, AgentProfile]:
    """The debaters by id."""
    return {a["id"]: a for a in state["agents"]}


def latest_of(state: ConversationState, kind: str, round_no: int) -> dict[str, Turn]:
    """Each agent's turn of ``kind`` in ``round_no``, by speaker."""
    return {t["speaker"]: t for t in state.get("transcript", []) if t["kind"] == kind and t["round"] == round_no}
