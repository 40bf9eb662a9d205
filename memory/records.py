"""The records the three memory tiers are made of.

They are plain ``TypedDict``s, so a checkpoint stores them as ordinary dicts:
they reload in any process (CLI, ``langgraph dev``, a test) without registering
classes with the serializer, and they are JSON as they stand.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

TurnKind = Literal["clarification", "proposal", "critique", "refinement", "synthesis", "message"]


class Usage(TypedDict):
    """Token usage reported by the provider (or counted, when it reports none)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


class TurnView(TypedDict):
    """What the speaker of a turn saw: the audit trail of its working context."""

    summary_id: str | None
    """The summary the speaker was given, or None."""
    turn_ids: list[str]
    """The turns it saw verbatim, oldest first."""
    prompt_tokens: int
    """Tokens of the whole prompt, counted before the call."""
    budget_tokens: int
    """The limit the prompt had to fit: context window minus reserved output."""
    shortened: bool
    """True when a turn or the task had to be shortened to fit."""


class Turn(TypedDict):
    """One contribution to the debate, never edited once appended."""

    id: str
    round: int
    kind: TurnKind
    speaker: str
    """Agent id, ``judge`` or ``user``."""
    role: str
    target: str | None
    """For critiques: the agent whose proposal is critiqued."""
    content: str
    tokens: int
    model: str | None
    """The model spec that wrote it; None for turns no model wrote."""
    usage: Usage | None
    latency_ms: int
    view: TurnView | None
    """None for turns no model wrote (carried-over proposals, answers)."""
    created_at: float
    carried_from: NotRequired[str]
    """For a proposal copied from the previous round's refinement."""


class SummaryFacets(TypedDict):
    """The structured part of a summary, carried forward through the chain."""

    key_points: list[str]
    decisions: list[str]
    unresolved: list[str]
    action_items: list[str]
    participants: list[str]
    domain_entities: list[str]


class SummaryRecord(TypedDict):
    """One summarization of one perspective, successful or not."""

    id: str
    agent_id: str
    role: str
    round: int
    depth: int
    """0 for a summary made from turns only, parent depth + 1 when it folds a summary in."""
    parent_id: str | None
    status: Literal["ok", "failed"]
    text: str
    """What the agent is shown: narrative and facets, within ``max_length``."""
    narrative: str
    facets: SummaryFacets
    covered_turn_ids: list[str]
    """Every turn this summary stands for, including those its parent covered."""
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int
    strategy: str
    reason: str
    """Which trigger fired, e.g. ``token_ratio 0.83 >= 0.80``."""
    structured: bool
    """False when the model could not give structured output and wrote plain text."""
    error: str | None
    latency_ms: int
    usage: Usage | None
    model: str
    temperature: float | None
    provider: str
    created_at: float
