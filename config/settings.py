"""The settings a debate runs with, resolved once where the run starts and fixed in its state, read-only.

``config.resolve`` makes them from the run's context and the config file; the
nodes read them from ``state["settings"]``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, NotRequired

from typing_extensions import ReadOnly, TypedDict

from debate_engine.calls.ledger import Price, SpendCap
from debate_engine.calls.limits import RateLimits

Synthesis = Literal["judge", "voting", "merge"]
"""How the outcome is settled."""


class AgentProfile(TypedDict):
    """One debater (or the judge) as the debate was set up."""

    id: ReadOnly[str]
    name: ReadOnly[str]
    role: ReadOnly[str]
    """A built-in role, ``judge``, or ``human`` for a person's seat (see :func:`is_human`)."""
    model: ReadOnly[str]
    """Model spec, e.g. ``openai:gpt-4o-mini``, ``local:smollm2``, ``fake``; empty for a human seat."""
    fallback_models: ReadOnly[list[str]]
    """Specs tried in order when the model fails."""
    temperature: ReadOnly[float]
    system_prompt: ReadOnly[str]
    """The resolved system prompt (a custom file's text, or the role's)."""
    summary_prompt: ReadOnly[str | None]
    """A custom summary prompt's text, or None for the built-in one."""
    clarification_prompt: NotRequired[ReadOnly[str | None]]
    """A custom clarification task's text (``clarificationPromptPath``), or None for the built-in one."""
    context_window: ReadOnly[int]
    max_output_tokens: ReadOnly[int]
    timeout_s: ReadOnly[float]
    summarization: ReadOnly[dict[str, Any]]
    """Resolved summarization settings (debate-wide merged with the agent's own)."""
    view_split: NotRequired[ReadOnly[dict[str, int]]]
    """Roundtable: tokens of the view for ``system``, ``summary`` and ``recent``."""


HUMAN_ROLE = "human"
"""The role of a seat a person takes: its turns are asked with ``interrupt()``, never of a model."""
PERSON_TURN_ROLE = "person"
"""The ``role`` a person's turns carry: a record with ``role: human`` and ``content`` is read back from a
checkpoint as a chat message (LangChain's serializer), so a turn never takes the seat's role."""
HUMAN_PREFIX = "human:"
"""A human seat's id starts with this, so a person never shares an id (and a perspective) with an agent."""


def is_human(profile: AgentProfile) -> bool:
    """Whether a person sits in this seat: no model, no key, no price, no charge."""
    return profile["role"] == HUMAN_ROLE


def seats(agents: list[AgentProfile], k: int) -> list[AgentProfile]:
    """Return ``k`` seats the agents take in turn; an agent seated more than once gets an id per seat.

    ``kiss`` seated three times is ``kiss-1``, ``kiss-2``, ``kiss-3`` (names ``Kiss 1`` ...): each seat
    answers, and draws, on its own. Seats of an agent seated once keep its id.
    """
    if not agents or k == len(agents):
        return list(agents)
    taken = [agents[i % len(agents)] for i in range(k)]
    times = Counter(a["id"] for a in taken)
    seen: dict[str, int] = {}
    out = []
    for agent in taken:
        if times[agent["id"]] == 1:
            out.append(agent)
            continue
        seen[agent["id"]] = n = seen.get(agent["id"], 0) + 1
        out.append(
            AgentProfile(**{**agent, "id": f"{agent['id']}-{n}", "name": f"{agent['name']} {n}"})
        )
    return out


def human_id(name: str) -> str:
    """Return the seat id of the person called ``name`` (kept as it is when it already carries the prefix)."""
    return name if name.startswith(HUMAN_PREFIX) else f"{HUMAN_PREFIX}{name}"


class RunSettings(TypedDict):
    """Everything a run was configured with, fixed at setup: resume reads it from here."""

    protocol: ReadOnly[Literal["phases", "roundtable", "sample"]]
    agents: ReadOnly[list[AgentProfile]]
    judge: ReadOnly[AgentProfile]
    rounds: ReadOnly[int]
    clarify: ReadOnly[bool]
    anonymous: NotRequired[ReadOnly[bool]]
    """True: every debater, person and the judge sees the other agents as Author A, B, C, shuffled per reader and
    seeded by the run (``nodes.views``), never by id, role or model. Absent (a run from before): named."""
    max_questions: ReadOnly[int]
    max_concurrency: ReadOnly[int]
    """Most model calls at once per provider."""
    stop_rule: NotRequired[ReadOnly[dict[str, Any]]]
    """``{"type": "fixed" | "convergence" | "quality", "min_round": n, "threshold": s}``: when the debate may stop
    before its last round."""
    synthesis: NotRequired[ReadOnly[Synthesis]]
    """How the outcome is settled: the judge synthesizes, the agents' final positions vote, or the judge merges
    the final refinements only."""
    judge_history: NotRequired[ReadOnly[Literal["full", "final_round"]]]
    """What the judge synthesizes from (``includeFullHistory``): the whole debate, or the final round's
    proposals and refinements only."""
    round_timeout_s: NotRequired[ReadOnly[float | None]]
    """The most running time one round (or roundtable turn) may take (``timeoutPerRound``); None: no limit."""
    cap: ReadOnly[SpendCap]
    """The spend cap, fixed at setup: a resumed debate continues with what is left."""
    prices: ReadOnly[dict[str, Price]]
    """Price per model spec the debate uses (US dollars per million tokens)."""
    rate_limits: NotRequired[ReadOnly[RateLimits]]
    """Requests and tokens per period per model and per provider (``rateLimits``, ``--rpm``, ``--tpm``): every
    request of the run takes from them before it is sent (``calls.limits``)."""
    briefings: NotRequired[ReadOnly[dict[str, str]]]
    """Notes that enter every perspective at the start of a round, by round (the memory probe)."""
    reply_notes: NotRequired[ReadOnly[dict[str, str]]]
    """Instructions added to the task of every call in a round, by round; never a turn."""
    roundtable: NotRequired[ReadOnly[ProtocolParams]]
    """The roundtable's parameters (its protocol only)."""
    escalate: NotRequired[ReadOnly[EscalateParams]]
    """Present: vote first (``--protocol escalate``). The phase debate starts with ``votes`` independent answers
    (the ``agents`` are its voters) and runs on only when they split; ``protocol`` stays ``phases``, the graph
    that runs it."""
    on_agent_failure: NotRequired[ReadOnly[Literal["stop", "continue"]]]
    """What an agent's call that failed after every retry and fallback does (``--on-agent-failure``,
    ``onAgentFailure``): ``stop`` the run, resumable (absent: stop), or ``continue`` without the agent."""
    missing: NotRequired[ReadOnly[list[MissingAgent]]]
    """The agents the debate went on without (``continue``), moved here from ``agents`` by the phase their
    call failed in (``nodes.dropped``): every later phase, router and the verdict read the panel that is left,
    and a resume never asks them again. Absent: none."""


class MissingAgent(TypedDict):
    """An agent the debate went on without: its call failed after every retry and fallback."""

    agent: ReadOnly[str]
    role: ReadOnly[str]
    models: ReadOnly[list[str]]
    """Its model, then its fallbacks: every one was asked."""
    error: ReadOnly[str]
    """Why the call failed, as the road said it (the models asked and the last error)."""
    round: ReadOnly[int]
    phase: ReadOnly[str]
    """The phase whose call failed (``propose``, ``critique``, ...)."""


class EscalateParams(TypedDict):
    """How an ``escalate`` debate votes before it debates."""

    votes: ReadOnly[int]
    """Voters, odd: each answers once, blind to the others, as a round-1 proposal."""
    window: ReadOnly[int]
    """Answers drawn at a time (``votes``: all at once); the first full window that agrees settles the debate."""


class ProtocolParams(TypedDict):
    """How a roundtable runs, as the seed's schema sketches it."""

    order: ReadOnly[Literal["round-robin", "moderator"]]
    max_turns: ReadOnly[int]
    summary_every: ReadOnly[int]
    """The rolling summary folds the oldest turns in every this many turns."""
    view: ReadOnly[dict[str, int]]
    """Token split of a speaker's view: ``system``, ``summary``, ``recent``."""
    stop_rule: ReadOnly[Literal["max_turns", "convergence"]]
    """Stop at max turns, or earlier when the moderator declares convergence."""
