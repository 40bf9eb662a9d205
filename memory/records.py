"""The records the three memory tiers are made of.

They are plain ``TypedDict``s, so a checkpoint stores them as ordinary dicts:
they reload in any process (CLI, ``langgraph dev``, a test) without registering
classes with the serializer, and they are JSON as they stand.

Coverage is positional: every turn has its ``seq`` (its index in the
transcript), a summary covers the perspective turns before its ``through``,
and a view shows the perspective turns from its ``from_seq`` on. That keeps
every record the same size however long the debate grows.
"""

from __future__ import annotations

import time
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from debate_engine.memory.tokens import count_tokens

TurnKind = Literal[
    "briefing",
    "clarification",
    "proposal",
    "critique",
    "refinement",
    "synthesis",
    "message",
    "moderation",
    "assessment",
]
"""Kinds of contribution; a moderation (the roundtable moderator's choice) and an assessment (the judge's check
after a round) are calls, never transcript turns."""


class ModelPrice(TypedDict):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: NotRequired[float]
    """A prompt token read from the provider's cache; absent: the input price (no discount unless known)."""
    cache_write: NotRequired[float]
    """A prompt token written to the provider's cache; absent: the input price."""
    estimated: NotRequired[list[str]]
    """The cache prices the price list lacks, taken from the provider's published ratio for the model's family
    (``cache_read``, ``cache_write``): reported as estimated."""


class Usage(TypedDict):
    """Token usage reported by the provider (or counted, when it reports none)."""

    input_tokens: int
    """Every prompt token, the cached ones included (as OpenAI and langchain count them)."""
    output_tokens: int
    total_tokens: int
    cache_read_tokens: NotRequired[int]
    """Prompt tokens the provider read from its prompt cache, billed at its cache price; absent: none."""
    cache_write_tokens: NotRequired[int]
    """Prompt tokens the provider wrote to its cache (Anthropic bills them above the input price); absent: none."""
    estimated: NotRequired[bool]
    """True for a request abandoned at its deadline: charged as the provider may bill it (its prompt and its whole
    output allowance), since no usage came back."""


class TurnView(TypedDict):
    """What the speaker of a turn saw: the audit trail of its working context."""

    summary_id: str | None
    """The summary the speaker was given, or None."""
    from_seq: int
    """Every perspective turn from this ``seq`` up to ``to_seq`` was shown verbatim."""
    to_seq: int
    """The transcript's length when the view was built."""
    turns: int
    """How many turns were shown verbatim."""
    prompt_tokens: int
    """Tokens of the whole prompt, counted before the call."""
    budget_tokens: int
    """The limit the prompt had to fit: context window minus reserved output."""
    shortened: bool
    """True when a turn or the task had to be shortened to fit."""


class Turn(TypedDict):
    """One contribution to the debate, never edited once appended."""

    seq: int
    """Position in the transcript: turn ``n`` is ``transcript[n]``."""
    id: str
    round: int
    kind: TurnKind
    speaker: str
    """Agent id, ``judge``, ``moderator`` or ``user``."""
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
    """None for turns no model wrote (answers, briefings)."""
    created_at: float
    truncated: NotRequired[bool]
    """True when the reply stopped at the output limit."""
    attempts: NotRequired[list[dict[str, Any]]]
    """Every request the call made, when it threw one away (a fallback, an empty or unparsed answer)."""
    clamped: NotRequired[list[str]]
    """Fields of its structured answer that were clipped or clamped to fit the schema."""
    position: NotRequired[dict[str, Any]]
    """A debater's stated position: ``position``, ``reason``, ``confidence``, ``answer``, and ``change`` when it
    differs from the speaker's last (what it answered, and whether it moved toward the majority)."""


IdentifierStats = dict[str, list[int]]
"""Per identifier: ``[turns that mentioned it, the newest such turn's seq]``."""


class SummaryFacets(TypedDict):
    """The structured part of a summary, carried forward through the chain."""

    key_points: list[str]
    decisions: list[str]
    unresolved: list[str]
    action_items: list[str]
    participants: list[str]
    domain_entities: list[str]
    identifiers: NotRequired[list[str]]
    """Lifted by code from every turn the chain covers (``memory.identifiers``), best ranked first; absent in
    summaries made before it existed."""


class SummaryRecord(TypedDict):
    """One summarization of one perspective, successful or not."""

    id: str
    agent_id: str
    role: str
    round: int
    depth: int
    """Summaries folded in since the chain last restarted; 0 for a fresh one."""
    parent_id: str | None
    status: Literal["ok", "failed"]
    text: str
    """The whole summary as text: identifiers, facets, then the narrative; views show it whole (only one made for
    a wider window than a prompt has is shortened there: ``memory.budget.summary_text``)."""
    narrative: str
    facets: SummaryFacets
    through: int
    """Covers every perspective turn with ``seq`` below this (including what its parent covered)."""
    calls: int
    """Model requests it made, failed ones included (more than one when read in chunks or retried)."""
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
    """What every attempt spent together."""
    model: str
    """The spec of the model that wrote it (a fallback's, when the agent's model failed)."""
    created_at: float
    attempts: NotRequired[list[dict[str, Any]]]
    """Every request it took, with each one's model and usage: what is charged."""
    identifier_stats: NotRequired[IdentifierStats]
    """How often and how lately each identifier of ``facets["identifiers"]`` was mentioned: the merge's input."""
    identifiers_dropped: NotRequired[int]
    """Identifiers of the covered turns that did not fit the facet's slot (counted, never silent)."""
    clamped: NotRequired[list[str]]
    """Fields of its structured answers that went past the schema's bounds: kept whole all the same."""


def new_turn(
    seq: int,
    *,
    kind: TurnKind,
    round_no: int,
    speaker: str,
    role: str,
    content: str,
    target: str | None = None,
    model: str | None = None,
    usage: Usage | None = None,
    latency_ms: int = 0,
    view: TurnView | None = None,
    truncated: bool = False,
    attempts: list[Any] | None = None,
    clamped: list[str] | None = None,
    position: dict[str, Any] | None = None,
) -> Turn:
    """Build a turn: the one place turns are made, so ids and token counts agree everywhere."""
    turn = Turn(
        seq=seq,
        id=f"{kind}:r{round_no}:{speaker}" + (f"->{target}" if target else ""),
        round=round_no,
        kind=kind,
        speaker=speaker,
        role=role,
        target=target,
        content=content,
        tokens=count_tokens(content),
        model=model,
        usage=usage,
        latency_ms=latency_ms,
        view=view,
        created_at=time.time(),
    )
    if truncated:
        turn["truncated"] = True
    if attempts and len(attempts) > 1:
        turn["attempts"] = list(attempts)
    if clamped:
        turn["clamped"] = list(clamped)
    if position:
        turn["position"] = dict(position)
    return turn
