"""The JSON config file (the seed system's schema): load it, validate it, list every problem.

Users bring their seed-system files as they are: every field the seed schema
declares loads, including those the engine does not use. Unknown keys are
rejected with the nearest valid one, so a typo never passes silently. Problems
are collected, not raised one at a time, and each names the field, the value
and what would be valid.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from debate_engine.memory.settings import SummarizationSettings
from debate_engine.prompts import role_names
from debate_engine.providers.factory import ModelConfigError, parse_spec, spec_from_config

log = logging.getLogger("debate.config")
MAX_ROUNDS = 10_000
"""Debates are bounded: a typo of a few zeros must not run forever."""
RESERVED_IDS = ("judge", "user", "moderator")


class ConfigError(ValueError):
    """The configuration is invalid; ``problems`` lists each one for the user."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AgentEntry(_Strict):
    """An agent (or the judge) in the seed schema."""

    id: str | None = None
    name: str | None = None
    role: str = "generalist"
    model: str | None = None
    provider: Literal["openai", "openrouter", "local", "fake"] | None = None
    temperature: float = Field(0.5, ge=0, le=2)
    enabled: bool = True
    system_prompt_path: str | None = Field(None, alias="systemPromptPath")
    summary_prompt_path: str | None = Field(None, alias="summaryPromptPath")
    clarification_prompt_path: str | None = Field(None, alias="clarificationPromptPath")
    summarization: dict[str, Any] | None = None
    context_window: int | None = Field(None, ge=512, alias="contextWindow")
    max_output_tokens: int | None = Field(None, ge=16, alias="maxOutputTokens")
    fallback_models: list[str] | None = Field(None, alias="fallbackModels")


class Termination(_Strict):
    type: Literal["fixed", "convergence", "quality"] = "fixed"
    threshold: float | None = None


class DebateSection(_Strict):
    """The ``debate`` object: the seed's fields and our own."""

    rounds: int = Field(3, ge=1, le=MAX_ROUNDS)
    termination_condition: Termination | None = Field(None, alias="terminationCondition")
    synthesis_method: Literal["judge", "voting", "merge"] = Field("judge", alias="synthesisMethod")
    include_full_history: bool = Field(False, alias="includeFullHistory")
    timeout_per_round: int | None = Field(None, ge=1, alias="timeoutPerRound")
    interactive_clarifications: bool = Field(False, alias="interactiveClarifications")
    clarifications_max_per_agent: int = Field(3, ge=0, le=20, alias="clarificationsMaxPerAgent")
    summarization: dict[str, Any] = Field(default_factory=dict)
    context_window: int | None = Field(None, ge=512, alias="contextWindow")
    max_output_tokens: int | None = Field(None, ge=16, alias="maxOutputTokens")
    max_concurrency: int | None = Field(None, ge=1, alias="maxConcurrency")


class SpendSection(_Strict):
    """The ``budget`` object: the spend cap."""

    max_tokens: int | None = Field(None, ge=1, alias="maxTokens")
    max_cost: float | None = Field(None, gt=0, alias="maxCost")


class PriceEntry(_Strict):
    """One model's price in US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class DebateFile(_Strict):
    """A whole config file."""

    agents: list[AgentEntry] = Field(default_factory=list)
    judge: AgentEntry | None = None
    debate: DebateSection = Field(default_factory=DebateSection)  # type: ignore[arg-type]
    evaluators: list[AgentEntry] = Field(default_factory=list)
    budget: SpendSection = Field(default_factory=lambda: SpendSection())
    prices: dict[str, PriceEntry] = Field(default_factory=dict)
    """Prices per model spec, in US dollars per million tokens: override or add to genai-prices."""


def _where(loc: tuple[Any, ...]) -> str:
    """A field's path, keys that are not plain names quoted so a message stays one line."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).isidentifier():
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part))}]"
    return out


def _valid_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel]:
    names = [p for p in loc[:-1] if isinstance(p, str)]
    if names and names[-1] in ("agents", "judge", "evaluators"):
        return AgentEntry
    if names and names[-1] == "debate":
        return DebateSection
    if names and names[-1] == "terminationCondition":
        return Termination
    return DebateFile


def unknown_key(where: str, key: str, valid: list[str]) -> str:
    """The message for a key that is not in the schema, with the nearest valid one."""
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}?" if near else f"valid keys: {', '.join(sorted(valid))}"
    return f"{where}: unknown key {key!r}; {hint}"


def _explain(error: dict[str, Any]) -> str:
    field = _where(error["loc"])
    value = error.get("input")
    kind = error["type"]
    if kind == "extra_forbidden":
        return unknown_key(field, str(error["loc"][-1]), _valid_keys(_model_at(error["loc"])))
    if field.endswith("temperature"):
        return f"{field}: {value!r} is outside 0-2; use a number from 0 to 2"
    if field.endswith("rounds"):
        return f"{field}: {value!r} is not a round count; use a whole number from 1 to {MAX_ROUNDS}"
    if kind == "literal_error":
        return f"{field}: {value!r} is not valid; {error['msg'].replace('Input should be', 'use')}"
    return f"{field}: {error['msg']} (got {value!r})"


def _read(p: Path) -> dict[str, Any]:
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"config file {p}: cannot read it ({exc.strerror or exc}); check the path"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"config file {p}: not UTF-8 text; save it as UTF-8 JSON"]) from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [f"config file {p}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
        ) from None
    if not isinstance(data, dict):
        raise ConfigError([f"config file {p}: the top level must be an object with agents, judge and debate"])
    return data


def load_config(path: str | os.PathLike[str]) -> DebateFile:
    """Read and validate a config file; raise ConfigError listing every problem at once."""
    try:
        where = Path(path).expanduser()
    except RuntimeError:
        raise ConfigError([f"config file {path}: cannot expand the ~ in it; give a full path"]) from None
    data = _read(where)
    problems: list[str] = []
    parsed: DebateFile | None = None
    try:
        parsed = DebateFile.model_validate(data)
    except ValidationError as exc:
        problems += [_explain(e) for e in exc.errors()]  # type: ignore[arg-type]
    problems += _roster_problems(data)
    debate: dict[str, Any] = data["debate"] if isinstance(data.get("debate"), dict) else {}
    if isinstance(debate.get("summarization"), dict):
        problems += _summary_problems("debate.summarization", debate["summarization"])
    if parsed is not None:
        for i, agent in enumerate(parsed.agents):
            problems += _check_entry(f"agents[{i}]", agent, {})
        if parsed.judge is not None:
            problems += _check_entry("judge", parsed.judge, {})
    if problems:
        raise ConfigError(problems)
    assert parsed is not None
    return parsed


def _roster_problems(data: dict[str, Any]) -> list[str]:
    """Roles, ids and enabled agents, read from the raw file so they show beside field errors."""
    agents: list[Any] = data["agents"] if isinstance(data.get("agents"), list) else []
    roles, problems, seen = role_names(), [], set()
    for i, agent in enumerate(a for a in agents if isinstance(a, dict)):
        role = str(agent.get("role", "generalist"))  # a wrong type is reported by the schema; keep going
        if role not in roles:
            problems.append(f"agents[{i}].role: {role!r} is not a role; use one of {', '.join(roles)}")
        ident = str(agent.get("id") or role)
        if ident in RESERVED_IDS:
            problems.append(f"agents[{i}].id: {ident!r} is reserved; give the agent another id")
        if ident in seen:
            problems.append(f"agents[{i}].id: {ident!r} is used twice; give each agent a unique id")
        seen.add(ident)
    if agents and not any(isinstance(a, dict) and a.get("enabled", True) for a in agents):
        problems.append('agents: no agent is enabled; set "enabled": true on at least one')
    return problems


def _summary_problems(where: str, values: dict[str, Any]) -> list[str]:
    valid = _valid_keys(SummarizationSettings) + list(SummarizationSettings.model_fields)
    problems = [unknown_key(where, k, _valid_keys(SummarizationSettings)) for k in values if k not in valid]
    try:
        SummarizationSettings.model_validate({k: v for k, v in values.items() if k in valid})
    except ValidationError as exc:
        problems += [f"{where}.{_where(e['loc']) or ''}: {e['msg']}".replace(".: ", ": ") for e in exc.errors()]
    return problems


def _readable(path: str) -> bool:
    try:
        return os.access(Path(path).expanduser(), os.R_OK)
    except (RuntimeError, ValueError):  # ~nobody/..., a NUL byte
        return False


def _check_entry(where: str, entry: AgentEntry, debate_summary: dict[str, Any]) -> list[str]:
    problems = []
    for spec in filter(None, [spec_from_config(entry.model, entry.provider), *(entry.fallback_models or [])]):
        try:
            parse_spec(spec)
        except ModelConfigError as exc:
            problems.append(f"{where}.model: {exc}")
    for name in ("system_prompt_path", "summary_prompt_path"):
        value = getattr(entry, name)
        if value and not _readable(value):
            alias = AgentEntry.model_fields[name].alias
            log.warning("%s.%s: cannot read %s; the built-in prompt will be used", where, alias, value)
    if entry.summarization:
        problems += _summary_problems(f"{where}.summarization", {**debate_summary, **entry.summarization})
    return problems
