"""Run settings: the graph's ``context_schema``, which Studio draws as a form.

Every field is optional and has a description; numbers carry their range
(``Field(ge=..., le=...)``), which Studio's form shows and setup checks.
Empty values fall back to the config file (``config_file``), then to the
environment, then to defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from difflib import get_close_matches
from typing import Annotated, Any, Literal

from pydantic import Field

from debate_engine.config.file import MAX_ROUNDS, ConfigError

MAX_VOTES = 99
"""The most voters an escalate run seats: on a split, each round has ``votes * (votes - 1)`` critiques."""
DEFAULT_VOTES = 3
"""The voters of ``debate run --protocol escalate`` without ``--votes``."""


def _d(text: str) -> dict[str, str]:
    return {"description": text}


@dataclass(frozen=True, kw_only=True)
class Context:
    """Settings for one debate run."""

    model: str = field(
        default="",
        metadata=_d(
            "Model for every agent and the judge: openai:<model>, openrouter:<model>, local:smollm2 or "
            "fake:words=N,latency_ms=N. Empty: the config file's models, else OPENAI_API_KEY / "
            "OPENROUTER_API_KEY pick a provider, else the embedded local model."
        ),
    )
    agents: str = field(
        default="",
        metadata=_d(
            "Comma-separated roles to debate (architect, performance, security, testing, kiss, generalist; human "
            "seats a person). Empty: the config file's agents, else architect,performance,security."
        ),
    )
    humans: str = field(
        default="",
        metadata=_d(
            "Comma-separated names of people who take a seat beside the agents (seat id human:NAME). Each of "
            "their turns pauses the run with an interrupt carrying the task and the view; resume with the answer."
        ),
    )
    rounds: Annotated[int | None, Field(ge=1, le=MAX_ROUNDS)] = field(
        default=None, metadata=_d("Debate rounds (>= 1). Empty: the config file's, else 3.")
    )
    config_file: str = field(
        default="", metadata=_d("Path to a JSON debate config in the seed schema.")
    )
    clarify: bool = field(
        default=False,
        metadata=_d("Ask each agent for clarifying questions first (interrupts for answers)."),
    )
    max_questions: Annotated[int | None, Field(ge=0, le=20)] = field(
        default=None,
        metadata=_d(
            "Most clarifying questions per agent. Empty: the config file's "
            "clarificationsMaxPerAgent, else 3."
        ),
    )
    summarize: bool | None = field(
        default=None, metadata=_d("Summarize long histories. Empty: the config file's, else on.")
    )
    summary_method: str = field(
        default="", metadata=_d("Summary strategy: rolling (default) or fresh.")
    )
    summary_threshold: int | None = field(
        default=None,
        metadata=_d("Characters of live history that fire a summary (seed default 5000)."),
    )
    summary_max_length: int | None = field(
        default=None,
        metadata=_d(
            "Most characters a summary is asked for (default 2500; its slot in the view may ask fewer)."
        ),
    )
    trigger_ratio: float | None = field(
        default=None,
        metadata=_d("Fire a summary at this share of the history budget (default 0.8)."),
    )
    context_window: Annotated[int | None, Field(ge=512, le=10_000_000)] = field(
        default=None,
        metadata=_d("Context window in tokens. Empty: the model's known window, else 8192."),
    )
    max_output_tokens: Annotated[int | None, Field(ge=16, le=1_000_000)] = field(
        default=None, metadata=_d("Tokens reserved for each answer (default 1024).")
    )
    max_concurrency: Annotated[int | None, Field(ge=1, le=10_000)] = field(
        default=None,
        metadata=_d(
            "Most model requests in flight at once to one provider for this run, summaries "
            "included. Empty: the config file's maxConcurrency, else no limit (the embedded "
            "model: one)."
        ),
    )
    rpm: Annotated[float | None, Field(ge=0.001, le=10**9)] = field(
        default=None,
        metadata=_d(
            "Rate limit: most requests per minute to each model the debate calls, shared by every run "
            "drawing on that model (per rateLimits.periodSeconds when the config file sets it). Empty: "
            "the config file's rateLimits, else no limit."
        ),
    )
    tpm: Annotated[float | None, Field(ge=0.001, le=10**12)] = field(
        default=None,
        metadata=_d(
            "Rate limit: most tokens per minute to each model the debate calls, each request counted "
            "as its prompt plus its output allowance until its usage is known. Empty: the config "
            "file's rateLimits, else no limit."
        ),
    )
    timeout_s: Annotated[float | None, Field(ge=0.001, le=86_400)] = field(
        default=None, metadata=_d("Per-call timeout in seconds (default 120).")
    )
    max_tokens: Annotated[int | None, Field(ge=1, le=10**12)] = field(
        default=None,
        metadata=_d(
            "Spend cap: most prompt + completion tokens over every call (agents, summaries, judge). "
            "When the next phase no longer fits, the judge synthesizes from what exists."
        ),
    )
    briefings: dict[str, str] | None = field(
        default=None,
        metadata=_d(
            "Notes that enter every perspective at the start of a round (or turn), by its number: "
            '{"1": "The budget is 2 engineers."}. The memory probe plants its facts this way.'
        ),
    )
    reply_notes: dict[str, str] | None = field(
        default=None,
        metadata=_d(
            "Instructions added to every agent's task in a round (or turn), by its number, seen only by "
            'that round\'s calls: {"2": "Quote the SLA you assume."}; a key "round:agent" '
            '("2:security") is that agent\'s alone. `debate probe --plant replies` uses it.'
        ),
    )
    stop_rule: str = field(
        default="",
        metadata=_d(
            "When the debate stops before its last round: fixed (never), convergence (once "
            "every agent holds the same position, or the judge finds another round would change "
            "nothing) or quality (once the judge scores the best proposal at the config's "
            "threshold, else 8, on the 1-10 rubric). Empty: the config's terminationCondition."
        ),
    )
    synthesis_method: str = field(
        default="",
        metadata=_d(
            "How the outcome is settled: judge (synthesizes the debate), voting (the agents' "
            "final positions vote) or merge (the judge merges the final refinements only). "
            "Empty: the config's synthesisMethod, else judge."
        ),
    )
    max_cost: Annotated[float | None, Field(ge=1e-9, le=10**9)] = field(
        default=None,
        metadata=_d("Spend cap in US dollars, priced with genai-prices (or the config's prices)."),
    )
    anonymous: bool | None = field(
        default=None,
        metadata=_d(
            "Anonymous critiques: critiques, refinements and the judge see the other agents as Author "
            "A, B, C (an order shuffled per run, the same for every reader), never by id, role or model; "
            "the transcript, report and viewer keep who wrote what. Empty: the config file's "
            "debate.anonymous, else off."
        ),
    )
    votes: Annotated[int | None, Field(ge=1, le=MAX_VOTES)] = field(
        default=None,
        metadata=_d(
            "Vote first (escalate): this many voters (odd), the agents seated in turn, answer "
            "independently. When all agree (same short answer, else same one-line position) that "
            "answer is the verdict, with no judge and no debate; otherwise the same voters debate, "
            "their answers as round 1's proposals. Empty: debate without a vote."
        ),
    )
    window: Annotated[int | None, Field(ge=2, le=MAX_VOTES)] = field(
        default=None,
        metadata=_d(
            "With votes: draw the answers this many at a time (2 to votes) and settle at the first "
            "window that agrees; escalate when none does. Empty: every answer at once."
        ),
    )
    on_agent_failure: Literal["stop", "continue"] | None = field(
        default=None,
        metadata=_d(
            "When an agent's call fails after every retry and fallback: stop the run (resumable), or "
            "continue the debate without that agent while one agent remains (its verdict then reads "
            "'partial: 2 of 3 agents', the missing agent named with its error). Empty: the config "
            "file's onAgentFailure, else stop."
        ),
    )


@dataclass(frozen=True, kw_only=True)
class RoundtableContext(Context):
    """Settings for one roundtable: a turn-taking debate of up to 10,000 turns in a bounded view."""

    turns: Annotated[int | None, Field(ge=1, le=MAX_ROUNDS)] = field(
        default=None, metadata=_d("Most turns (1 to 10,000). Empty: 100.")
    )
    order: str = field(
        default="",
        metadata=_d(
            "Who speaks next: round-robin (default) or moderator (the judge picks, says why, "
            "and may declare convergence)."
        ),
    )
    summary_every: Annotated[int | None, Field(ge=2, le=MAX_ROUNDS)] = field(
        default=None,
        metadata=_d(
            "Fold the oldest turns into the shared rolling summary every N turns (default 50)."
        ),
    )
    view_system: Annotated[int | None, Field(ge=64, le=10**6)] = field(
        default=None, metadata=_d("Tokens of a speaker's view for topic and role (2048).")
    )
    view_summary: Annotated[int | None, Field(ge=64, le=10**6)] = field(
        default=None, metadata=_d("Tokens of the view for the rolling summary (1024).")
    )
    view_recent: Annotated[int | None, Field(ge=64, le=10**6)] = field(
        default=None, metadata=_d("Tokens of the view for recent turns, verbatim (5120).")
    )


def context_of(given: dict[str, Any] | None, runtime: Any) -> Context:
    """Return the run's settings: those passed with the input (they survive a stop before setup), else the runtime's.

    An unknown key is an error naming the nearest valid one: ``round: 1`` must not run a 3-round debate.
    """
    if isinstance(runtime, dict) and not given:
        given = runtime  # a server run may hand over the plain dict
    if given:
        fields = {k: v for k, v in given.items() if k != "protocol"}
        kind = (
            RoundtableContext
            if given.get("protocol") == "roundtable" or "turns" in fields
            else Context
        )
        known = set(kind.__dataclass_fields__)
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ConfigError([_unknown(key, known, kind) for key in unknown])
        return kind(**fields)
    return runtime or Context()


def _unknown(key: str, known: set[str], kind: type[Context]) -> str:
    """Return the message for a context key no setting has, with the nearest one when there is one."""
    near = get_close_matches(key, sorted(known), n=1)
    hint = (
        f"; did you mean {near[0]!r}?"
        if near
        else f"; the settings are: {', '.join(sorted(known))}"
    )
    where = "the roundtable's" if kind is RoundtableContext else "the debate's"
    return f"context.{key[:80]}: unknown key, not one of {where} settings{hint}"


def context_dict(context: Context) -> dict[str, Any]:
    """Return a context as the plain dict an input carries (``context_of`` reads it back)."""
    protocol = "roundtable" if isinstance(context, RoundtableContext) else "phases"
    return {
        **{k: v for k, v in asdict(context).items() if v not in (None, "")},
        "protocol": protocol,
    }


def context_fields_of(protocol: str | None) -> set[str]:
    """Return the settings a debate of ``protocol`` takes: a ``Context``'s, and for a roundtable its own besides."""
    return {
        f.name
        for f in dataclasses.fields(RoundtableContext if protocol == "roundtable" else Context)
    }


def context_for(protocol: str, fields: dict[str, Any]) -> Any:
    """Return a job's settings as the protocol's context (a roundtable's fields are dropped for a phase debate)."""
    known = context_fields_of(protocol)
    return (RoundtableContext if protocol == "roundtable" else Context)(
        **{k: v for k, v in fields.items() if k in known}
    )
