"""The typed state of one debate: three memory tiers, the run's settings and its status.

Append-only logs (and the values written once per debate) use
``DeltaChannel``: a checkpoint stores only each step's new items, never the
whole list again, so storage grows linearly with the debate. Everything else
is small and bounded: ``status`` is what ``debate list`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langgraph.channels import DeltaChannel
from typing_extensions import TypedDict

from debate_engine.calls.ledger import Spend, Tally
from debate_engine.config.settings import MissingAgent, RunSettings, Synthesis
from debate_engine.memory.records import SummaryRecord, Turn

SNAPSHOT_EVERY = 1_000_000
"""Writes between full snapshots of a log. A snapshot copies the whole log, so
they are left to LangGraph's own bound (one per 5,000 steps) to cap replay."""

Phase = Literal[
    "setup",
    "clarify",
    "summarize",
    "propose",
    "critique",
    "refine",
    "turn",
    "moderate",
    "synthesize",
    "done",
]


def append_log(current: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """Append every batch of new records; the same result however writes are batched."""
    out = list(current)
    for batch in writes:
        out.extend(batch)
    return out


class FacetEntry(TypedDict):
    """One item of the facet registry."""

    text: str
    first_seen: int
    """The ``through`` of the first summary that recorded it."""
    last_seen: int
    count: int
    """How many summaries recorded it: how referenced it is."""


def merge_registry(
    current: dict[str, dict[str, FacetEntry]], writes: Sequence[dict[str, dict[str, FacetEntry]]]
) -> dict[str, dict[str, FacetEntry]]:
    """Merge facet entries by name and item key: counts add up, first and last sightings widen."""
    out = {name: dict(items) for name, items in current.items()}
    for write in writes:
        for name, items in write.items():
            table = out.setdefault(name, {})
            for key, entry in items.items():
                old = table.get(key)
                table[key] = (
                    entry
                    if old is None
                    else FacetEntry(
                        text=entry["text"],
                        first_seen=min(old["first_seen"], entry["first_seen"]),
                        last_seen=max(old["last_seen"], entry["last_seen"]),
                        count=old["count"] + entry["count"],
                    )
                )
    return out


def keep_last(current: Any, writes: Sequence[Any]) -> Any:
    """Return the newest write wins: for values set once per debate, stored once."""
    return writes[-1] if writes else current


class Dissent(TypedDict):
    """An agent that does not hold the winning position: its final position and reason, verbatim."""

    agent: str
    position: str
    reason: str
    answer: str | None
    """Its short answer (empty or None when it stated none)."""


class Vote(TypedDict):
    """One position held at the end, with the agents holding it and their summed confidence."""

    position: str
    answer: str | None
    agents: list[str]
    confidence: int


class Ballot(TypedDict):
    """The vote an ``escalate`` debate starts with, and what it decided (``nodes.escalate``)."""

    votes: int
    """Voters seated: the vote's k."""
    window: int
    """Answers drawn at a time; k when they are all drawn at once."""
    drawn: int
    """Answers drawn so far."""
    split: list[int]
    """How the drawn answers fall by the agreement key, the largest group first: ``[3]`` is unanimous, ``[2, 1]``
    a split (an answer that states no position agrees with none)."""
    outcome: Literal["settled", "escalated", "drawing"]
    """``settled``: a full window agreed, and its answer is the verdict (no judge, no debate); ``escalated``: every
    answer drawn and no window agreed, so the voters debated; ``drawing``: the vote was cut short (the spend
    cap), and the judge synthesized what had been drawn."""
    settled_by: list[str]
    """The voters of the window that agreed (empty unless ``settled``)."""
    key: str | None
    """The agreement key the window shared (``nodes.positions.key_of``); None unless ``settled``."""
    mark: str
    """How the verdict says it: ``settled by a unanimous vote of 3``, ``escalated: split 2-1``."""


class VerdictConfidence(TypedDict):
    """How sure the outcome is, and how that was computed."""

    value: int | None
    """The agreement's share in percent; the judge's own confidence when no positions were stated."""
    judge: NotRequired[int | None]
    """The judge's own confidence beside the agreement (absent when no positions were stated)."""
    how: str


class Panel(TypedDict):
    """Who answered for a verdict (``nodes.panel``): the distinct models and providers, and who is missing."""

    agents: int
    """Agents seated when the debate started (a person's seat not counted), the missing ones included."""
    persons: int
    """Seats a person took."""
    answered: int
    """Agents that answered at least once."""
    models: list[str]
    """The distinct models that answered the agents, each answer counted by the model that gave it (a
    fallback's, when the primary failed)."""
    providers: list[str]
    """The distinct providers of those models."""
    one_model: bool
    """Every agent was answered by one and the same model (two agents or more): their errors are correlated."""
    said: str
    """The panel in words: ``3 agents answered on 2 distinct models (...) from 2 providers (...)``."""
    warning: str | None
    """Said when ``one_model``: the vote is less independent than it looks."""
    missing: list[MissingAgent]
    """The agents the debate went on without (``--on-agent-failure continue``), each with its error."""
    partial: str | None
    """``partial: 2 of 3 agents`` when some are missing; None for a whole panel."""


class Verdict(TypedDict):
    """The outcome a user weighs, whatever the synthesis method (``nodes.verdict``)."""

    method: Synthesis
    position: str | None
    """The winning position (None when no agent stated one)."""
    answer: str | None
    """The agents' plurality short answer, or None."""
    judge_answer: NotRequired[str | None]
    """The judge's own short answer (None when it stated none or no judge was asked); absent in verdicts made
    before the judge was asked for one."""
    agreement: list[str]
    """The agents holding the winning position."""
    dissent: list[Dissent]
    cruxes: list[str]
    votes: list[Vote]
    confidence: VerdictConfidence
    ballot: NotRequired[Ballot]
    """The vote an ``escalate`` debate started with: its split, whether it settled the outcome or escalated to
    the debate, and its ``mark``; absent in every other debate."""
    panel: NotRequired[Panel]
    """Who answered: distinct models and providers, the warning when every agent is one model, and the agents
    the debate went on without (``partial``); absent in verdicts made before the panel was stated."""


class StopReason(TypedDict):
    """Why and when a debate stopped early."""

    round: int
    reason: str
    by: NotRequired[str]
    """``judge`` when the judge's check after a round stopped it; absent otherwise."""


class Assessment(TypedDict):
    """The judge's check after a round under a ``convergence`` or ``quality`` stop rule."""

    round: int
    rule: str
    model: str
    reason: str
    stop: bool
    converged: NotRequired[bool]
    """A ``convergence`` check's finding."""
    best: NotRequired[str | None]
    """A ``quality`` check's best agent, its ``score``, and the ``threshold`` that stops a debate."""
    score: NotRequired[int | None]
    threshold: NotRequired[float]


class RoundClock(TypedDict):
    """The running time of the current round (``timeoutPerRound``)."""

    round: int
    elapsed_s: float


class Solution(TypedDict):
    """The judge's final answer."""

    description: str
    key_decisions: list[str]
    trade_offs: list[str]
    recommendations: list[str]
    open_risks: list[str]
    cruxes: NotRequired[list[str]]
    """The points the agents still dispute at the end, as the judge names them."""
    confidence: int
    """The judge's own confidence, 0-100 (0 with ``structured`` False: none was stated)."""
    confidence_reasons: str
    structured: bool
    """False when the model could not give structured output and this is plain text."""
    verdict: NotRequired[Verdict]
    """The outcome a user weighs: ``method``, the winning ``position`` and ``answer``, ``agreement`` (the agents
    holding it), ``dissent`` (every other agent's final position and reason, verbatim), ``cruxes``, ``votes``,
    a ``confidence`` that says how it was computed, ``judge_answer`` (the judge's own short answer; None when
    none was stated or no judge was asked), the ``panel`` it stands on (models and providers that answered, a
    one-model warning, ``partial`` and the missing agents) and, in an ``escalate`` debate, the ``ballot`` it
    started with."""


class Status(TypedDict):
    """The small per-debate record ``debate list`` reads, whatever the debate's length."""

    problem: str
    """The problem's first line, shortened."""
    phase: Phase
    round: int
    rounds: int
    turns: int
    summaries: int
    tokens: int
    cost: float
    """US dollars spent so far, as billed (cached prompt tokens at the cache prices)."""
    started_at: float
    updated_at: float
    cached_tokens: NotRequired[int]
    """Prompt tokens the provider read from its cache so far; absent in older checkpoints: 0."""
    saved: NotRequired[float]
    """Dollars the provider's cache saved so far; absent: 0."""
    partial: NotRequired[str]
    """Set by each phase once the debate goes on without an agent (``--on-agent-failure continue``): ``2 of 3
    agents; missing security (<its error>)``, what ``debate list`` shows; absent: every agent is seated."""


class InputState(TypedDict):
    """What a caller passes in."""

    problem: str
    """The problem to debate."""
    context: NotRequired[dict[str, Any]]
    """The run's settings as a plain dict (the Context's fields), kept with the input. Without it, the graph's
    first node (``intake``) keeps the run's ``context`` instead; either way a debate stopped before setup
    resumes with them."""


class OutputState(TypedDict):
    """What a finished debate returns."""

    problem: str
    settings: RunSettings
    transcript: list[Turn]
    summary_log: list[SummaryRecord]
    solution: Solution | None
    status: Status
    spend: Spend
    stopped: str | None
    stop_reason: NotRequired[StopReason | None]
    assessments: NotRequired[list[Assessment]]


class Moderation(TypedDict):
    """The moderator's latest choice."""

    turn: int
    speaker: str
    reason: str
    converged: bool


class ForkOrigin(TypedDict):
    """Where a forked debate comes from: ``debate list`` shows it, and the original stays untouched."""

    thread: str
    """The original debate's thread."""
    round: int
    """The round (the turn, in the roundtable) at whose end the fork was taken."""
    checkpoint: str
    """The id of the original's checkpoint the fork's first state was copied from."""
    turns: NotRequired[int]
    """The transcript turns the fork kept: its own turns follow them (absent in older forks)."""
    summaries: NotRequired[int]
    """The summary records the fork kept: its own summaries follow them."""
    spent: NotRequired[Tally]
    """What the kept part cost when the original made it; the fork's own ``spend`` starts at zero."""
    running_s: NotRequired[float]
    """How long the original ran to make the kept part."""


class ConversationState(TypedDict):
    """Everything a debate keeps, checkpointed after every step."""

    problem: Annotated[str, DeltaChannel(keep_last, str, snapshot_frequency=SNAPSHOT_EVERY)]
    """The problem under debate."""
    context: Annotated[
        dict[str, Any], DeltaChannel(keep_last, dict, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """The settings a caller passed with the input (see ``InputState``), marked with the protocol: ``intake``
    resolved them into ``settings``; a fork edits them and resolves again."""
    context_taken: NotRequired[dict[str, Any] | None]
    """The ``context`` the graph's first node last took: an input's own settings differ from it."""
    settings: Annotated[
        RunSettings, DeltaChannel(keep_last, dict, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """The run's resolved settings, fixed once by ``intake`` (or written as its update by ``debate run``)."""
    transcript: Annotated[list[Turn], DeltaChannel(append_log, snapshot_frequency=SNAPSHOT_EVERY)]
    """Tier 1: every contribution, append-only, never trimmed; ``transcript[n]["seq"] == n``."""
    summary_log: Annotated[
        list[SummaryRecord], DeltaChannel(append_log, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """Tier 2: every summary and failed attempt, in order, the judge's included."""
    round: int
    """The current round (0 before the first)."""
    phase: Phase
    """The phase that ran last."""
    summarized_for: str
    """The phase the last summarize step prepared (``"round:phase"``): summarize runs once per phase."""
    questions: list[dict[str, Any]]
    """Clarifying questions asked, waiting for the user's answers."""
    solution: Solution | None
    """The judge's synthesis, once made."""
    status: Status
    """What ``debate list`` shows."""
    spend: Annotated[Spend, DeltaChannel(keep_last, dict, snapshot_frequency=SNAPSHOT_EVERY)]
    """Tokens and dollars spent so far (stored once per step as a write, not again in every checkpoint)."""
    stopped: str | None
    """Why the debate stopped taking turns early (``budget``, ``convergence``, ``timeout``), or None."""
    stop_reason: NotRequired[StopReason | None]
    """Why and when the debate stopped early by a stop rule: ``{"round", "reason"}`` (the agents converged, or
    the moderator found so), with ``by: "judge"`` when the judge's check stopped it. A budget or time stop sets
    ``stopped`` alone."""
    assessments: Annotated[
        list[Assessment], DeltaChannel(append_log, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """The judge's check after each round under a ``convergence`` or ``quality`` stop rule: ``{"round", "rule",
    "model", "reason", "stop"}`` with ``converged``, or ``best``, ``score`` and ``threshold``."""
    round_clock: RoundClock | None
    """The running time of the current round: ``{"round": n, "elapsed_s": s}`` (``timeoutPerRound``); time
    stopped between a Ctrl-C and its resume does not count."""
    turn_count: int
    """Roundtable: turns taken so far."""
    current_speaker: str | None
    """Roundtable: who speaks next (chosen by the order or the moderator)."""
    moderation: Moderation | None
    """Roundtable: the moderator's latest choice and why."""
    facets: Annotated[
        dict[str, dict[str, FacetEntry]],
        DeltaChannel(merge_registry, dict, snapshot_frequency=SNAPSHOT_EVERY),
    ]
    """Every facet any summary recorded, by facet name and item: never dropped, whatever later summaries keep."""
    forked_from: NotRequired[ForkOrigin | None]
    """Set on a fork (``debate fork``, or any copy of a past checkpoint made so): where its history came from.
    It lives in state, not in run metadata, so the fork names its origin in every later checkpoint."""
