"""The conditional summarize step: before a phase, summarize every speaker whose view could not wait.

Most summaries are made beside the phase before the one that needs them
(``summaries.ahead``, run by the phase runner): this node is the fallback for
what that projection missed, and for a step no phase precedes. The jobs, the
tasks and how their records reach state live in ``nodes.summaries``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.config.settings import AgentProfile
from debate_engine.graph.state import ConversationState
from debate_engine.memory import Decision, SummaryRecord
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.schedule import next_step, step_key
from debate_engine.nodes.status import advance
from debate_engine.nodes.summaries import (
    SummarizationAborted,
    SummaryCall,
    applied,
    asummary_call,
    backing_off,
    decisions,
    jobs,
    registry_of,
    speakers,
    summary_call,
    summary_instructions,
    summary_request,
    summary_schema,
)

__all__ = [
    "SummarizationAborted",
    "SummaryCall",
    "backing_off",
    "due",
    "registry_of",
    "summarize_node",
    "summary_request",
    "summary_schema",
    "summary_instructions",
]


def due(state: ConversationState) -> list[tuple[AgentProfile, Decision]]:
    """Return the perspectives to summarize before the next step: its speakers'."""
    step, round_no = next_step(state)
    key = step_key(step, round_no)
    if step == "done" or state.get("stopped") or state.get("summarized_for") == key:
        return []  # a debate stopped by its spend cap goes straight to a synthesis sized to what is left
    return decisions(
        state, speakers(state["settings"], step), round_no, state.get("transcript", []), key
    )


def plan(state: ConversationState) -> list[SummaryCall]:
    """One summary job per due perspective, in a fixed order."""
    _, round_no = next_step(state)
    return jobs(state, due(state), round_no)


def apply(
    state: ConversationState, calls: Sequence[SummaryCall], records: list[SummaryRecord]
) -> dict[str, Any]:
    """Append the records; stop when one failed and its settings say to abort."""
    step, round_no = next_step(state)
    return {
        **applied(calls, records),
        "summarized_for": step_key(step, round_no),
        "status": advance(state, "summarize", state["round"], summaries=records),
    }


summarize_node = phase_node("summarize", plan, apply, tasks=(summary_call, asummary_call))
