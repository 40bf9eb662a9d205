"""The typed state of one debate: three memory tiers and the debate's plan.

Append-only logs use ``DeltaChannel``: a checkpoint stores only each step's
new items, not the whole list again, so checkpoint storage grows linearly with
the debate instead of quadratically.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langgraph.channels import DeltaChannel
from typing_extensions import TypedDict

from memory.records import SummaryRecord, Turn

SNAPSHOT_EVERY = 200
"""Writes between full snapshots of a delta channel: replay time against storage."""


def append_log(current: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """Append every batch of new records; the same result however writes are batched."""
    out = list(current)
    for batch in writes:
        out.extend(batch)
    return out


def merge_round_summaries(
    current: dict[str, dict[str, SummaryRecord]], writes: Sequence[dict[str, dict[str, SummaryRecord]]]
) -> dict[str, dict[str, SummaryRecord]]:
    """Merge ``{round: {agent_id: record}}`` writes; a later record for a key wins."""
    out = {k: dict(v) for k, v in current.items()}
    for write in writes:
        for round_key, by_agent in write.items():
            out.setdefault(round_key, {}).update(by_agent)
    return out


def merge_questions(current: list[Any], update: list[Any]) -> list[Any]:
    """Collect clarification questions from parallel agents; an empty list clears them."""
    return [*current, *update] if update else []


class AgentProfile(TypedDict):
    """One debater (or the judge) as the debate was set up."""

    id: str
    name: str
    role: str
    model: str
    """Model spec, e.g. ``openai:gpt-4o-mini``, ``local:smollm2``, ``fake``."""
    temperature: float
    system_prompt_path: str | None
    summary_prompt_path: str | None
    summarization: dict[str, Any]
    """Resolved summarization settings (debate-wide merged with the agent's own)."""


class Clarification(TypedDict):
    """Questions one agent asked before the debate."""

    agent_id: str
    questions: list[str]
    view: NotRequired[Any]


class Solution(TypedDict):
    """The judge's final answer."""

    description: str
    key_decisions: list[str]
    trade_offs: list[str]
    recommendations: list[str]
    open_risks: list[str]
    confidence: int
    confidence_reasons: str
    structured: bool
    """False when the model could not give structured output and this is plain text."""


class InputState(TypedDict):
    """What a caller passes in."""

    problem: str
    """The problem to debate."""


class OutputState(TypedDict):
    """What a finished debate returns."""

    problem: str
    transcript: list[Turn]
    summaries: dict[str, dict[str, SummaryRecord]]
    summary_log: list[SummaryRecord]
    judge_summary: SummaryRecord | None
    solution: Solution | None


class ConversationState(TypedDict):
    """Everything a debate keeps, checkpointed after every step."""

    problem: str
    """The problem under debate."""
    transcript: Annotated[list[Turn], DeltaChannel(append_log, snapshot_frequency=SNAPSHOT_EVERY)]
    """Tier 1: every contribution, append-only, never trimmed."""
    summaries: Annotated[
        dict[str, dict[str, SummaryRecord]], DeltaChannel(merge_round_summaries, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """Tier 2: summaries per round (as a string) keyed by agent id."""
    summary_log: Annotated[list[SummaryRecord], DeltaChannel(append_log, snapshot_frequency=SNAPSHOT_EVERY)]
    """Tier 2: every summary and failed attempt, in order, the judge's included."""
    judge_summary: SummaryRecord | None
    """The judge's summary of the final round, when its trigger fired."""
    agents: list[AgentProfile]
    """The debaters, fixed at setup so a resumed debate keeps them."""
    judge: AgentProfile
    """The judge, fixed at setup."""
    rounds: int
    """How many rounds the debate runs."""
    round: int
    """The current round, 0 before the first."""
    phase: Literal["setup", "clarify", "summarize", "propose", "critique", "refine", "synthesize", "done"]
    """The phase that ran last: what `debate list` shows."""
    questions: Annotated[list[Clarification], merge_questions]
    """Clarification questions waiting for the user's answers."""
    solution: Solution | None
    """The judge's synthesis, once made."""
    tasks: list[AgentTask]
    """The calls the last planner node sent out (replaced by each planner)."""


class AgentTask(TypedDict):
    """One model call planned by a phase's planner and sent to its worker.

    It carries the finished, budgeted prompt rather than the transcript, so
    the task list a checkpoint keeps stays small however long the debate runs.
    """

    node: str
    """The worker node that runs it."""
    agent_id: str
    role: str
    kind: str
    round: int
    target: str | None
    model: str
    temperature: float
    max_tokens: int
    timeout_s: float
    system: str
    user: str
    view: Any
    """The ``TurnView`` record of what this prompt shows."""
    extra: NotRequired[dict[str, Any]]
    """Worker-specific material (the summary plan for ``summarize``)."""
