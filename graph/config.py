"""The JSON config file (the seed system's schema) and its resolution into a plan.

Users bring their seed-system files as they are: every field the seed schema
declares loads, including those the engine does not use. Problems are
collected, not raised one at a time, and each names the field, the value and
what would be valid.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from debate_engine.graph.context import Context
from debate_engine.graph.state import AgentProfile, RunSettings
from debate_engine.memory.budget import BudgetError, make_budget
from debate_engine.memory.settings import SummarizationSettings
from debate_engine.prompts import load_prompt, read_prompt_file, role_names
from debate_engine.providers.factory import (
    ModelConfigError,
    context_window,
    default_model,
    default_output_tokens,
    parse_spec,
    spec_from_config,
)

log = logging.getLogger("debate.config")
DEFAULT_ROLES = ("architect", "performance", "security")
MAX_ROUNDS = 10_000
"""Debates are bounded: a typo of a few zeros must not run forever."""


class ConfigError(ValueError):
    """The configuration is invalid; ``problems`` lists each one for the user."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class AgentEntry(_Loose):
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


class Termination(_Loose):
    type: Literal["fixed", "convergence", "quality"] = "fixed"
    threshold: float | None = None


class DebateSection(_Loose):
    """The ``debate`` object: the seed's fields and our own."""

    rounds: int = Field(3, ge=1, le=MAX_ROUNDS)
    termination_condition: Termination | None = Field(None, alias="terminationCondition")
    synthesis_method: Literal["judge", "voting", "merge"] = Field("judge", alias="synthesisMethod")
    include_full_history: bool = Field(False, alias="includeFullHistory")
    timeout_per_round: int | None = Field(None, alias="timeoutPerRound")
    interactive_clarifications: bool = Field(False, alias="interactiveClarifications")
    clarifications_max_per_agent: int = Field(3, ge=0, alias="clarificationsMaxPerAgent")
    summarization: dict[str, Any] = Field(default_factory=dict)
    context_window: int | None = Field(None, ge=512, alias="contextWindow")
    max_output_tokens: int | None = Field(None, ge=16, alias="maxOutputTokens")
    max_concurrency: int | None = Field(None, ge=1, alias="maxConcurrency")


class DebateFile(_Loose):
    """A whole config file."""

    agents: list[AgentEntry] = Field(default_factory=list)
    judge: AgentEntry | None = None
    debate: DebateSection = Field(default_factory=DebateSection)  # type: ignore[arg-type]


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _explain(error: dict[str, Any]) -> str:
    field = _where(error["loc"])
    value = error.get("input")
    kind = error["type"]
    if field.endswith("temperature"):
        return f"{field}: {value!r} is outside 0-2; use a number from 0 to 2"
    if field.endswith("rounds"):
        return f"{field}: {value!r} is not a round count; use a whole number >= 1"
    if kind == "literal_error":
        return f"{field}: {value!r} is not valid; {error['msg'].replace('Input should be', 'use')}"
    return f"{field}: {error['msg']} (got {value!r})"


def load_config(path: str | os.PathLike[str]) -> DebateFile:
    """Read and validate a config file; raise ConfigError listing every problem."""
    p = Path(path).expanduser()
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"config file {p}: cannot read it ({exc.strerror or exc}); check the path"]) from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [f"config file {p}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
        ) from None
    if not isinstance(data, dict):
        raise ConfigError([f"config file {p}: the top level must be an object with agents, judge and debate"])
    problems: list[str] = []
    try:
        parsed = DebateFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError([_explain(e) for e in exc.errors()]) from None  # type: ignore[arg-type]
    roles = role_names()
    seen: set[str] = set()
    for i, agent in enumerate(parsed.agents):
        if agent.role not in roles:
            problems.append(f"agents[{i}].role: {agent.role!r} is not a role; use one of {', '.join(roles)}")
        ident = agent.id or agent.role
        if ident in seen:
            problems.append(f"agents[{i}].id: {ident!r} is used twice; give each agent a unique id")
        seen.add(ident)
        problems += _check_entry(f"agents[{i}]", agent, parsed.debate.summarization)
    if parsed.agents and not any(a.enabled for a in parsed.agents):
        problems.append('agents: no agent is enabled; set "enabled": true on at least one')
    if parsed.judge is not None:
        problems += _check_entry("judge", parsed.judge, parsed.debate.summarization)
    try:
        SummarizationSettings.model_validate(parsed.debate.summarization)
    except ValidationError as exc:
        problems += [f"debate.summarization: {e['msg']}" for e in exc.errors()]
    if problems:
        raise ConfigError(problems)
    return parsed


def _check_entry(where: str, entry: AgentEntry, debate_summary: dict[str, Any]) -> list[str]:
    problems = []
    spec = spec_from_config(entry.model, entry.provider)
    if spec:
        try:
            parse_spec(spec)
        except ModelConfigError as exc:
            problems.append(f"{where}.model: {exc}")
    for name in ("system_prompt_path", "summary_prompt_path"):
        value = getattr(entry, name)
        if value and not os.access(Path(value).expanduser(), os.R_OK):
            alias = AgentEntry.model_fields[name].alias
            log.warning("%s.%s: cannot read %s; the built-in prompt will be used", where, alias, value)
    try:
        SummarizationSettings.model_validate({**debate_summary, **(entry.summarization or {})})
    except ValidationError as exc:
        problems += [f"{where}.summarization: {e['msg']}" for e in exc.errors()]
    return problems


def resolve(context: Context) -> RunSettings:
    """Combine the run's context with its config file into the settings fixed in state.

    Raises ConfigError listing every problem at once.
    """
    file = load_config(context.config_file) if context.config_file else DebateFile()
    entries, problems = _entries(context, file)
    overrides = {
        k: v
        for k, v in {
            "enabled": context.summarize,
            "method": context.summary_method or None,
            "threshold": context.summary_threshold,
            "maxLength": context.summary_max_length,
            "triggerTokenRatio": context.trigger_ratio,
        }.items()
        if v is not None
    }
    try:
        debate_summary = SummarizationSettings().merged(file.debate.summarization).merged(overrides)
    except ValidationError as exc:
        problems += [f"summarization: {e['msg']}" for e in exc.errors()]
        debate_summary = SummarizationSettings()
    if problems:
        raise ConfigError(problems)
    judge_entry = (file.judge or AgentEntry(id="judge", role="judge", temperature=0.2)).model_copy(
        update={"role": "judge", "id": "judge"}
    )
    agents = [_profile(context, file.debate, debate_summary, e, e.role) for e in entries]
    judge = _profile(context, file.debate, debate_summary, judge_entry, "judge")
    problems = _check_budgets([*agents, judge])
    if problems:
        raise ConfigError(problems)
    debate = file.debate
    return RunSettings(
        protocol="phases",
        agents=agents,
        judge=judge,
        rounds=context.rounds or debate.rounds,
        clarify=context.clarify or debate.interactive_clarifications,
        max_questions=context.max_questions if context.clarify else debate.clarifications_max_per_agent,
        max_concurrency=context.max_concurrency or debate.max_concurrency or 0,
    )


def _profile(
    context: Context, debate: DebateSection, summary: SummarizationSettings, entry: AgentEntry, default_id: str
) -> AgentProfile:
    """One agent's settings: the run's context first, then its config entry, the debate section, defaults."""
    spec = context.model or spec_from_config(entry.model, entry.provider) or default_model()
    ident = entry.id or default_id
    window = context.context_window or entry.context_window or debate.context_window
    return AgentProfile(
        id=ident,
        name=entry.name or ident.replace("-", " ").title(),
        role=entry.role,
        model=spec,
        fallback_models=list(entry.fallback_models or []),
        temperature=entry.temperature,
        system_prompt=read_prompt_file(entry.system_prompt_path, f"systemPromptPath of {ident}")
        or load_prompt(f"roles/{entry.role}"),
        summary_prompt=read_prompt_file(entry.summary_prompt_path, f"summaryPromptPath of {ident}")
        or read_prompt_file(summary.prompt_path, "summarization.promptPath"),
        context_window=context_window(spec, window),
        max_output_tokens=context.max_output_tokens or entry.max_output_tokens or debate.max_output_tokens
        or default_output_tokens(spec),
        timeout_s=context.timeout_s or (debate.timeout_per_round / 1000 if debate.timeout_per_round else 120.0),
        summarization=summary.merged(entry.summarization).model_dump(by_alias=True),
    )


def _check_budgets(profiles: list[AgentProfile]) -> list[str]:
    problems = []
    for p in profiles:
        try:
            make_budget(p["context_window"], p["max_output_tokens"])
        except BudgetError as exc:
            problems.append(f"{p['id']}: {exc}")
    return problems


def _entries(context: Context, file: DebateFile) -> tuple[list[AgentEntry], list[str]]:
    """The agents to run: the file's enabled ones, chosen from by ``context.agents`` (ids or roles)."""
    problems: list[str] = []
    if context.model:
        try:
            parse_spec(context.model)
        except ModelConfigError as exc:
            problems.append(f"model: {exc}")
    if context.rounds is not None and not 1 <= context.rounds <= MAX_ROUNDS:
        problems.append(f"rounds: {context.rounds} is not a round count; use a whole number from 1 to {MAX_ROUNDS}")
    configured = [a for a in file.agents if a.enabled]
    if not context.agents:
        return configured or [AgentEntry(id=r, role=r) for r in DEFAULT_ROLES], problems
    wanted = [r.strip() for r in context.agents.split(",") if r.strip()]
    if len(set(wanted)) != len(wanted):
        problems.append(f"agents: {context.agents!r} names an agent twice; list each once")
    if configured:
        chosen = [a for a in configured if (a.id or a.role) in wanted or a.role in wanted]
        known = {a.id or a.role for a in configured} | {a.role for a in configured}
        problems += [
            f"agents: {w!r} is neither the id nor the role of a configured agent; use one of {', '.join(sorted(known))}"
            for w in wanted
            if w not in known
        ]
        return chosen, problems
    roles = role_names()
    problems += [f"agents: {r!r} is not a role; use one of {', '.join(roles)}" for r in wanted if r not in roles]
    return [AgentEntry(id=r, role=r) for r in wanted], problems
