"""The JSON config file (the seed system's schema): load it, validate it, list every problem.

Seed-system files load as they are. An unknown key is rejected with the nearest valid one, so a typo never
passes silently; every problem is collected and names the field, the value (cut short) and what would be valid.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError
from pydantic_core import ErrorDetails

from debate_engine.config.settings import HUMAN_ROLE
from debate_engine.config.wording import (
    NOT_A_NUMBER,
    not_a_number,
    quoted,
    spec_problems,
    unknown_key,
)
from debate_engine.errors import InputError
from debate_engine.memory.summary_settings import SummarizationSettings
from debate_engine.prompts import role_names
from debate_engine.providers.factory import spec_from_config

log = logging.getLogger("debate.config")
MAX_ROUNDS = 10_000
"""Debates are bounded: a typo of a few zeros must not run forever."""
RESERVED_IDS = ("judge", "user", "moderator")


class ConfigError(InputError, ValueError):
    """The configuration is invalid; ``problems`` lists each one for the user."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems

    def lines(self) -> list[str]:
        """Each problem of the configuration on a line of its own."""
        return list(self.problems)


# Numbers are strict: `true` is not one (lax parsing reads it as 1), nor is "3"; a Real takes 3 as 3.0.
Real = Annotated[float, Strict()]
Whole = Annotated[int, Strict()]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AgentEntry(_Strict):
    """An agent (or the judge) in the seed schema."""

    id: str | None = None
    name: str | None = None
    role: str = "generalist"
    model: str | None = None
    provider: Literal["openai", "openrouter", "local", "fake"] | None = None
    temperature: Real = Field(0.5, ge=0, le=2)
    enabled: bool = True
    system_prompt_path: str | None = Field(None, alias="systemPromptPath")
    summary_prompt_path: str | None = Field(None, alias="summaryPromptPath")
    clarification_prompt_path: str | None = Field(None, alias="clarificationPromptPath")
    summarization: dict[str, Any] | None = None
    context_window: Whole | None = Field(None, ge=512, alias="contextWindow")
    max_output_tokens: Whole | None = Field(None, ge=16, alias="maxOutputTokens")
    fallback_models: list[str] | None = Field(None, alias="fallbackModels")


class Termination(_Strict):
    """When the debate stops before its last round: ``convergence`` once every agent holds the same position (or
    the judge finds another round would change nothing), ``quality`` once the judge scores the best proposal at
    ``threshold`` on the 1-10 rubric."""

    type: Literal["fixed", "convergence", "quality"] = "fixed"
    threshold: Real | None = None
    """The score that stops a ``quality`` debate (1-10; default 8)."""
    min_round: int | None = Field(None, ge=1, alias="minRound")
    """The first round after which the rule may stop the debate (default: 2 under ``convergence``, 1 under
    ``quality``, whose judge scores every round)."""


class DebateSection(_Strict):
    """The ``debate`` object: the seed's fields and our own."""

    rounds: Whole = Field(3, ge=1, le=MAX_ROUNDS)
    termination_condition: Termination | None = Field(None, alias="terminationCondition")
    synthesis_method: Literal["judge", "voting", "merge"] = Field("judge", alias="synthesisMethod")
    include_full_history: bool | None = Field(None, alias="includeFullHistory")
    """Whether the judge synthesizes from the whole debate (true, the default) or from the final round's
    proposals and refinements only (false, as the seed system's judge did)."""
    timeout_per_round: Whole | None = Field(None, ge=1, alias="timeoutPerRound")
    interactive_clarifications: bool = Field(False, alias="interactiveClarifications")
    anonymous: bool = False  # the others as Author A, B, C in every prompt (RunSettings.anonymous)
    clarifications_max_per_agent: Whole = Field(3, ge=0, le=20, alias="clarificationsMaxPerAgent")
    summarization: dict[str, Any] = Field(default_factory=dict)
    context_window: Whole | None = Field(None, ge=512, alias="contextWindow")
    max_output_tokens: Whole | None = Field(None, ge=16, alias="maxOutputTokens")
    max_concurrency: Whole | None = Field(None, ge=1, alias="maxConcurrency")
    on_agent_failure: Literal["stop", "continue"] = Field("stop", alias="onAgentFailure")


class SpendSection(_Strict):
    """The ``budget`` object: the spend cap."""

    max_tokens: Whole | None = Field(None, ge=1, alias="maxTokens")
    max_cost: Real | None = Field(None, gt=0, alias="maxCost")


class PriceEntry(_Strict):
    """One model's price in US dollars per million tokens."""

    input: Real = Field(ge=0)
    output: Real = Field(ge=0)
    cache_read: Real | None = Field(None, ge=0, alias="cacheRead")
    """A prompt token read from the provider's cache; absent: the input price (no discount unless stated)."""
    cache_write: Real | None = Field(None, ge=0, alias="cacheWrite")
    """A prompt token written to the provider's cache; absent: the input price."""


class RateLimitEntry(_Strict):
    """A model's (or a provider's) rate limits: ``rpm`` requests and ``tpm`` tokens (each request's prompt and
    output allowance, settled to the usage reported) per period."""

    rpm: Real | None = Field(None, gt=0)
    tpm: Real | None = Field(None, gt=0)


class RateLimitsSection(_Strict):
    """The ``rateLimits`` object: what the provider account allows by model spec and by provider, per
    ``periodSeconds`` (60, as providers state their limits)."""

    period_seconds: Real = Field(60.0, ge=1, le=86_400, alias="periodSeconds")
    models: dict[str, RateLimitEntry] = Field(default_factory=dict)
    providers: dict[Literal["openai", "openrouter", "local", "fake"], RateLimitEntry] = Field(
        default_factory=dict
    )


class DebateFile(_Strict):
    """A whole config file."""

    agents: list[AgentEntry] = Field(default_factory=list)
    judge: AgentEntry | None = None
    debate: DebateSection = Field(default_factory=DebateSection)
    evaluators: list[AgentEntry] = Field(default_factory=list)
    budget: SpendSection = Field(default_factory=lambda: SpendSection())
    prices: dict[str, PriceEntry] = Field(default_factory=dict)
    """Prices per model spec, in US dollars per million tokens: override or add to genai-prices."""
    rate_limits: RateLimitsSection = Field(default_factory=RateLimitsSection, alias="rateLimits")


def _where(loc: tuple[Any, ...]) -> str:
    """Return a field's path, keys that are not plain names quoted (and cut) so a message stays one readable line."""
    out = ""
    for part in loc:
        out += (
            f"[{part}]"
            if isinstance(part, int)
            else f"[{quoted(str(part))}]"
            if not _plain(part)
            else f".{part}"
            if out
            else str(part)
        )
    return out


def _plain(key: Any) -> bool:
    """Return a key a path may show as it is: a short identifier."""
    return str(key).isidentifier() and len(str(key)) <= 40


def _valid_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel]:
    if loc[0] == "prices" and len(loc) == 3:  # prices.<model spec>.<key>: the spec is no field name
        return PriceEntry
    if loc[0] == "rateLimits":  # rateLimits.models.<spec>.<key>: the spec is no field name either
        return RateLimitEntry if len(loc) == 4 else RateLimitsSection
    models: dict[str, type[BaseModel]] = {
        "agents": AgentEntry,
        "judge": AgentEntry,
        "evaluators": AgentEntry,
        "debate": DebateSection,
        "terminationCondition": Termination,
        "budget": SpendSection,
    }
    return models.get(next((p for p in reversed(loc[:-1]) if isinstance(p, str)), ""), DebateFile)


def _explain(error: ErrorDetails) -> str:
    loc, value, kind = error["loc"], error.get("input"), error["type"]
    if kind == "extra_forbidden":  # the key is quoted once: in the message, not also in the path
        parent = loc if _plain(loc[-1]) else loc[:-1]
        return unknown_key(_where(parent) or "config", str(loc[-1]), _valid_keys(_model_at(loc)))
    field = _where(loc)
    if field.endswith("rounds"):
        return f"{field}: {quoted(value)} is not a round count; use a whole number from 1 to {MAX_ROUNDS}"
    if kind in NOT_A_NUMBER:
        return not_a_number(field, value, whole=kind.startswith("int"))
    if field.endswith("temperature"):
        return f"{field}: {quoted(value)} is outside 0-2; use a number from 0 to 2"
    if kind == "literal_error":
        return f"{field}: {quoted(value)} is not valid; {error['msg'].replace('Input should be', 'use')}"
    return f"{field}: {error['msg']} (got {quoted(value)})"


def _read(p: Path) -> dict[str, Any]:
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            [f"config file {p}: cannot read it ({exc.strerror or exc}); check the path"]
        ) from None
    except UnicodeDecodeError:
        raise ConfigError([f"config file {p}: not UTF-8 text; save it as UTF-8 JSON"]) from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError([f"config file {p}: invalid JSON at {at}: {exc.msg}"]) from None
    except (
        RecursionError
    ):  # about 1,000 levels: below that, every value is quoted by `quoted`, depth-limited
        raise ConfigError(
            [
                f"config file {p}: nested too deep for the JSON parser (about 1,000 levels); the schema "
                "needs 5 at most (agents[0].summarization.threshold): remove the extra brackets"
            ]
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            [f"config file {p}: the top level must be an object with agents, judge and debate"]
        )
    return data


def load_config(path: str | os.PathLike[str]) -> DebateFile:
    """Read and validate a config file; raise ConfigError listing every problem at once."""
    try:
        where = Path(path).expanduser()
    except RuntimeError:
        raise ConfigError(
            [f"config file {path}: cannot expand the ~ in it; give a full path"]
        ) from None
    data = _read(where)
    problems: list[str] = []
    parsed: DebateFile | None = None
    try:
        parsed = DebateFile.model_validate(data)
    except ValidationError as exc:
        problems += [_explain(e) for e in exc.errors()]
    problems += _roster_problems(data)
    summary = data["debate"].get("summarization") if isinstance(data.get("debate"), dict) else None
    problems += (
        _summary_problems("debate.summarization", summary) if isinstance(summary, dict) else []
    )
    if parsed is not None:
        entries = [(f"agents[{i}]", a) for i, a in enumerate(parsed.agents)] + [
            ("judge", parsed.judge)
        ]
        problems += [
            p for where, entry in entries if entry is not None for p in _check_entry(where, entry)
        ]
        for spec in parsed.rate_limits.models:
            problems += spec_problems("rateLimits.models", spec)
    if problems or parsed is None:
        raise ConfigError(problems)
    return parsed


def _roster_problems(data: dict[str, Any]) -> list[str]:
    """Roles, ids and enabled agents, read from the raw file so they show beside field errors."""
    agents: list[Any] = data["agents"] if isinstance(data.get("agents"), list) else []
    roles, problems, seen = role_names(), [], set()
    for i, agent in enumerate(a for a in agents if isinstance(a, dict)):
        role = agent.get(
            "role", "generalist"
        )  # a wrong type is reported by the schema; never str() it: it may nest
        if isinstance(role, str) and role not in (*roles, HUMAN_ROLE):
            problems.append(
                f"agents[{i}].role: {quoted(role)} is not a role; use one of {', '.join(roles)}, "
                f"or {HUMAN_ROLE} for a person's seat"
            )
        if role == HUMAN_ROLE:
            problems += _human_problems(f"agents[{i}]", agent)
        if not isinstance(ident := agent.get("id") or role, str):
            continue
        if ident in RESERVED_IDS:
            problems.append(
                f"agents[{i}].id: {quoted(ident)} is reserved; give the agent another id"
            )
        if ident in seen:
            problems.append(
                f"agents[{i}].id: {quoted(ident)} is used twice; give each agent a unique id"
            )
        seen.add(ident)
    if (
        "agents" in data and agents == []
    ):  # an empty list is a decision to make, not a reason to guess
        problems.append(
            'agents: the list is empty; list at least one agent, or leave "agents" out to debate '
            "with the default ones (architect, performance, security)"
        )
    if agents and not any(isinstance(a, dict) and a.get("enabled", True) for a in agents):
        problems.append('agents: no agent is enabled; set "enabled": true on at least one')
    judge = data.get("judge")
    if isinstance(judge, dict) and "role" in judge and judge["role"] not in (*roles, "judge"):
        problems.append(
            f"judge.role: {quoted(judge['role'])} is not a role; use one of {', '.join(roles)} "
            "(the judge synthesizes from that outlook), or leave it out"
        )
    return problems


HUMAN_REFUSED = (
    "model",
    "provider",
    "fallback_models",
    "temperature",
    "summarization",
    "summary_prompt_path",
    "clarification_prompt_path",
)
"""A person's seat has no model: these keys would be accepted and ignored, so they are refused."""


def _human_problems(where: str, agent: dict[str, Any]) -> list[str]:
    """Return a human seat takes an id, a name, a system prompt and a budget (what its view holds), nothing a model needs."""
    given = [
        key
        for name in HUMAN_REFUSED
        for key in {name, AgentEntry.model_fields[name].alias or name}
        if key in agent
    ]
    return [
        f"{where}.{key}: a human seat has no model, so {key} means nothing there; remove it (keep id, name, "
        "systemPromptPath, contextWindow and maxOutputTokens, which size the view the person is shown)"
        for key in sorted(given)
    ]


def _summary_problems(where: str, values: dict[str, Any]) -> list[str]:
    valid = _valid_keys(SummarizationSettings) + list(SummarizationSettings.model_fields)
    problems = [
        unknown_key(where, k, _valid_keys(SummarizationSettings)) for k in values if k not in valid
    ]
    try:
        SummarizationSettings.model_validate(
            {k: v for k, v in values.items() if k in valid}, strict=True
        )
    except ValidationError as exc:
        for e in exc.errors():
            field = f"{where}.{_where(e['loc'])}".rstrip(".")
            problems.append(
                not_a_number(field, e.get("input"), whole=e["type"].startswith("int"))
                if e["type"] in NOT_A_NUMBER
                else f"{field}: {e['msg']}"
            )
    return problems


def _readable(path: str) -> bool:
    try:
        return os.access(Path(path).expanduser(), os.R_OK)
    except (RuntimeError, ValueError):  # ~nobody/..., a NUL byte
        return False


def _check_entry(where: str, entry: AgentEntry) -> list[str]:
    problems = []
    for spec in filter(None, [spec_from_config(entry.model, entry.provider)]):
        problems += spec_problems(f"{where}.model", spec)
    for i, spec in enumerate(entry.fallback_models or []):
        problems += spec_problems(f"{where}.fallbackModels[{i}]", spec)
    for name in ("system_prompt_path", "summary_prompt_path"):
        value = getattr(entry, name)
        if value and not _readable(value):
            log.warning(
                "%s.%s: cannot read %s; the built-in prompt will be used",
                where,
                AgentEntry.model_fields[name].alias,
                value,
            )
    if entry.summarization:
        problems += _summary_problems(f"{where}.summarization", entry.summarization)
    return problems
