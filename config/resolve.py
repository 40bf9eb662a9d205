"""Run settings: the run's context and its config file, resolved once into the state's ``settings``.

Precedence per field: the context (Studio form, CLI flags, SDK), then the
agent's entry in the config file, then the file's ``debate`` section, then
defaults. Every problem is collected and reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from pydantic import ValidationError

from debate_engine.calls.ledger import Price, SpendCap
from debate_engine.calls.spend import judge_floor
from debate_engine.config.check import check_context
from debate_engine.config.context import Context, RoundtableContext
from debate_engine.config.file import (
    MAX_ROUNDS,
    AgentEntry,
    ConfigError,
    DebateFile,
    DebateSection,
    load_config,
)
from debate_engine.config.outcome import escalate_params, outcome_problems, stop_rule, voters
from debate_engine.config.rate_limits import rate_limits
from debate_engine.config.roundtable_params import roundtable_params, with_view
from debate_engine.config.settings import (
    HUMAN_ROLE,
    AgentProfile,
    RunSettings,
    Synthesis,
    human_id,
    is_human,
)
from debate_engine.config.wording import quoted
from debate_engine.memory.budget import BudgetError, make_budget
from debate_engine.memory.summary_settings import SummarizationSettings
from debate_engine.prompts import load_prompt, read_prompt_file, role_names
from debate_engine.providers.factory import (
    ModelConfigError,
    context_window,
    default_model,
    default_output_tokens,
    parse_spec,
    spec_from_config,
)
from debate_engine.providers.prices import cost, price_of

DEFAULT_ROLES = ("architect", "performance", "security")
DEFAULT_CALL_TIMEOUT_S = 120.0
"""Each model's deadline for one answer, the road's retries included, when none is configured."""
__all__ = ["ConfigError", "MAX_ROUNDS", "check_context", "load_config", "resolve"]


def resolve(context: Context) -> RunSettings:
    """Combine the run's context with its config file into the settings fixed in state.

    Raises ConfigError listing every problem at once.
    """
    context, problems = check_context(context)
    file = load_config(context.config_file) if context.config_file else DebateFile()
    entries, entry_problems = _entries(context, file)
    problems += entry_problems
    debate_summary, summary_problems = _summarization(context, file)
    problems += summary_problems
    if any(p.startswith(("context_window", "max_output_tokens", "model:")) for p in problems):
        raise ConfigError(problems)  # no profile or budget can be built from these
    entries = [
        e for e in entries if e.role in (*role_names(), HUMAN_ROLE)
    ]  # the others are already reported
    agents = [
        (_seat if e.role == HUMAN_ROLE else _profile)(
            context, file.debate, debate_summary, e, e.role
        )
        for e in entries
    ]
    agents, vote_problems = voters(context, agents)
    problems += vote_problems
    judge = _judge(context, file, debate_summary)
    problems += _check_budgets([*agents, judge]) + _note_problems(context.reply_notes, agents)
    cap = SpendCap(
        max_tokens=context.max_tokens or file.budget.max_tokens,
        max_cost=context.max_cost or file.budget.max_cost,
    )
    prices, price_problems = _prices([*agents, judge], file, needed=cap["max_cost"] is not None)
    problems += (
        price_problems + _cap_problems(cap, judge, prices) + outcome_problems(context, file.debate)
    )
    if problems:
        raise ConfigError(problems)
    debate = file.debate
    settings = RunSettings(
        cap=cap,
        prices=prices,
        protocol="phases",
        agents=agents,
        judge=judge,
        rounds=context.rounds or debate.rounds,
        clarify=context.clarify or debate.interactive_clarifications,
        anonymous=debate.anonymous if context.anonymous is None else context.anonymous,
        max_questions=_given(context.max_questions, debate.clarifications_max_per_agent),
        round_timeout_s=debate.timeout_per_round / 1000 if debate.timeout_per_round else None,
        stop_rule=stop_rule(context, debate),
        judge_history="final_round" if debate.include_full_history is False else "full",
        synthesis=cast(Synthesis, context.synthesis_method or debate.synthesis_method),
        max_concurrency=context.max_concurrency or debate.max_concurrency or 0,
        briefings=_notes(context.briefings),
        reply_notes=_notes(context.reply_notes),
        rate_limits=rate_limits(context, file, [*agents, judge]),
        on_agent_failure=context.on_agent_failure or debate.on_agent_failure,
    )
    if context.votes:
        return RunSettings(
            **{**settings, "escalate": escalate_params(context.votes, context.window)}
        )
    if isinstance(context, RoundtableContext):
        params = roundtable_params(context)
        return RunSettings(
            **{
                **settings,
                "protocol": "roundtable",
                "clarify": False,
                "roundtable": params,
                "rounds": params["max_turns"],
                "agents": [with_view(a, params["view"]) for a in agents],
                "judge": with_view(judge, params["view"]),
            }
        )
    return settings


def _judge(context: Context, file: DebateFile, summary: SummarizationSettings) -> AgentProfile:
    """Return the judge, honouring its config: a ``role`` is the outlook it judges from, an ``id`` its name.

    Its own id and part stay ``judge``: the memory gives that id the whole debate, and seed files
    (``"id": "judge-main", "role": "generalist"``) must keep loading.
    """
    given = file.judge or AgentEntry(role="judge", temperature=0.2)
    outlook = given.role if "role" in given.model_fields_set and given.role != "judge" else None
    name = given.name or (
        given.id.replace("-", " ").title() if given.id and given.id != "judge" else None
    )
    entry = given.model_copy(update={"role": "judge", "id": "judge", "name": name})
    judge = _profile(context, file.debate, summary, entry, "judge")
    if outlook and not given.system_prompt_path:
        described = load_prompt(f"roles/{outlook}")
        also = (
            f"\n\nJudge from the {outlook} outlook as well; that role is described so: {described}"
        )
        judge = {**judge, "system_prompt": judge["system_prompt"] + also}
    return judge


def _given(flag: int | None, file_value: int) -> int:
    """Return a setting given explicitly wins over the config file's, whose model holds the built-in default."""
    return file_value if flag is None else flag


def _note_problems(notes: dict[str, str] | None, agents: list[AgentProfile]) -> list[str]:
    """Name every reply note whose key is neither a round nor ``round:agent`` of an agent in the debate."""
    ids = {a["id"] for a in agents}
    problems = []
    for key in notes or {}:
        number, _, agent = str(key).partition(":")
        if not number.strip().isdigit() or (agent and agent not in ids):
            problems.append(
                f"reply_notes: key {key!r} is not a round number or 'round:agent' with one of "
                f"the agents {sorted(ids)}"
            )
    return problems


def _notes(notes: dict[str, str] | None) -> dict[str, str]:
    """Round-numbered notes with string keys, blank ones dropped."""
    return {str(k): str(v) for k, v in (notes or {}).items() if str(v).strip()}


def _profile(
    context: Context,
    debate: DebateSection,
    summary: SummarizationSettings,
    entry: AgentEntry,
    default_id: str,
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
        clarification_prompt=read_prompt_file(
            entry.clarification_prompt_path, f"clarificationPromptPath of {ident}"
        ),
        context_window=context_window(spec, window),
        max_output_tokens=context.max_output_tokens
        or entry.max_output_tokens
        or debate.max_output_tokens
        or default_output_tokens(spec),
        timeout_s=context.timeout_s or DEFAULT_CALL_TIMEOUT_S,
        summarization=summary.merged(entry.summarization).model_dump(by_alias=True),
    )


def _seat(
    context: Context,
    debate: DebateSection,
    summary: SummarizationSettings,
    entry: AgentEntry,
    default_id: str,
) -> AgentProfile:
    """Return a person's seat: the budget and prompt an agent in it would have, and no model.

    Its view is never summarized: a summary would need a model to write it, and the seat has none
    (the person is shown the newest turns that fit the budget).
    """
    ident = human_id(entry.id or default_id)
    base = _profile(
        context,
        debate,
        summary,
        entry.model_copy(update={"role": "generalist", "id": ident}),
        ident,
    )
    return AgentProfile(
        **{
            **base,
            "role": HUMAN_ROLE,
            "name": entry.name or ident.removeprefix("human:"),
            "model": "",
            "fallback_models": [],
            "summarization": {**base["summarization"], "enabled": False},
        }
    )


def _summarization(context: Context, file: DebateFile) -> tuple[SummarizationSettings, list[str]]:
    """Return the debate-wide summarization: defaults, then the file's, then the context's fields."""
    given = {
        "enabled": context.summarize,
        "method": context.summary_method or None,
        "threshold": context.summary_threshold,
        "maxLength": context.summary_max_length,
        "triggerTokenRatio": context.trigger_ratio,
    }
    overrides = {k: v for k, v in given.items() if v is not None}
    try:
        return SummarizationSettings().merged(file.debate.summarization).merged(overrides), []
    except ValidationError as exc:
        return SummarizationSettings(), [f"summarization: {e['msg']}" for e in exc.errors()]


def _prices(
    profiles: list[AgentProfile], file: DebateFile, needed: bool
) -> tuple[dict[str, Price], list[str]]:
    """Return the price of every model the debate may call; with a cost cap, an unknown price is an error."""
    overrides = {spec: _price(p.model_dump(exclude_none=True)) for spec, p in file.prices.items()}
    prices: dict[str, Price] = {}
    problems = []
    for spec in sorted(
        {s for p in profiles if not is_human(p) for s in (p["model"], *p["fallback_models"])}
    ):
        found = price_of(spec, overrides)
        if found is not None:
            prices[spec] = _price(found)
        elif needed:
            problems.append(
                f"max_cost: no known price for {spec}; add it to the config file as "
                f'"prices": {{"{spec}": {{"input": USD_PER_MILLION, "output": USD_PER_MILLION}}}}'
            )
    return prices, problems


def _price(given: Mapping[str, Any]) -> Price:
    """Return a price with the cache rates only where someone stated them (absent: the input price), and which of them
    were estimated from the provider's published ratios."""
    price = Price(input=float(given["input"]), output=float(given["output"]))
    for key in ("cache_read", "cache_write"):
        if key in given:
            price[key] = float(given[key])
    if given.get("estimated"):
        price["estimated"] = list(given["estimated"])
    return price


def _cap_problems(cap: SpendCap, judge: AgentProfile, prices: dict[str, Price]) -> list[str]:
    """Return a cap too small to pay even for the judge's synthesis is a mistake to report now."""
    prompt, answer = judge_floor(judge["context_window"], judge["max_output_tokens"])
    problems = []
    if cap["max_tokens"] is not None and cap["max_tokens"] < prompt + answer:
        problems.append(
            f"max_tokens: {cap['max_tokens']} cannot pay for the judge's synthesis alone "
            f"({prompt + answer} tokens); raise the cap"
        )
    price = prices.get(judge["model"])
    if cap["max_cost"] is not None and price and cost(price, prompt, answer) > cap["max_cost"]:
        problems.append(
            f"max_cost: {cap['max_cost']} cannot pay for the judge's synthesis alone "
            f"(${cost(price, prompt, answer):.4f}); raise the cap"
        )
    return problems


def _check_budgets(profiles: list[AgentProfile]) -> list[str]:
    """One line per distinct budget problem, naming every agent it concerns."""
    by_problem: dict[str, list[str]] = {}
    for p in profiles:
        try:
            make_budget(p["context_window"], p["max_output_tokens"])
        except BudgetError as exc:
            by_problem.setdefault(str(exc), []).append(p["id"])
    return [f"{', '.join(ids)}: {problem}" for problem, ids in by_problem.items()]


def _entries(context: Context, file: DebateFile) -> tuple[list[AgentEntry], list[str]]:
    """Return the seats: the chosen agents (``human`` among them seats a person), then a seat per ``context.humans``."""
    chosen, problems = _chosen(context, file)
    names = [n.strip() for n in context.humans.split(",")] if context.humans.strip() else []
    for name in names:
        if not HUMAN_NAME.fullmatch(name):
            problems.append(
                f"humans: {quoted(name)} is not a name for a seat; use 1 to 40 letters, digits, '_', "
                "'-' or '.', starting with a letter or digit (e.g. --human alice)"
            )
    seats = [
        *chosen,
        *(AgentEntry(id=n, role=HUMAN_ROLE) for n in names if HUMAN_NAME.fullmatch(n)),
    ]
    people = [human_id(e.id or e.role) for e in seats if e.role == HUMAN_ROLE]
    problems += [
        f"humans: {quoted(seat)} takes two seats; give each person a different name"
        for seat in sorted({p for p in people if people.count(p) > 1})
    ]
    return seats, problems


HUMAN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def _chosen(context: Context, file: DebateFile) -> tuple[list[AgentEntry], list[str]]:
    """Return the agents to run: the file's enabled ones, chosen from by ``context.agents`` (ids or roles)."""
    problems: list[str] = []
    if context.model:
        try:
            parse_spec(context.model)
        except ModelConfigError as exc:
            problems.append(f"model: {exc}")
    configured = [a for a in file.agents if a.enabled]
    if not context.agents:
        return configured or [AgentEntry(id=r, role=r) for r in DEFAULT_ROLES], problems
    wanted = [r.strip() for r in context.agents.split(",") if r.strip()]
    if not wanted:  # "," or " ": a mistake, never a request for the default agents
        problems.append(
            f"agents: {quoted(context.agents)} names no agent; list roles (or configured ids) separated "
            f"by commas, e.g. architect,security, or leave it out for the default agents"
        )
    if len(set(wanted)) != len(wanted):
        problems.append(f"agents: {quoted(context.agents)} names an agent twice; list each once")
    if configured:
        chosen = [a for a in configured if (a.id or a.role) in wanted or a.role in wanted]
        known = {a.id or a.role for a in configured} | {a.role for a in configured}
        problems += [
            f"agents: {quoted(w)} is neither the id nor the role of a configured agent; use one of "
            f"{', '.join(sorted(known))}"
            for w in wanted
            if w not in (*known, HUMAN_ROLE)
        ]
        if HUMAN_ROLE in wanted and not any(a.role == HUMAN_ROLE for a in chosen):
            chosen.append(AgentEntry(role=HUMAN_ROLE))  # a person's seat needs no configuring
        return chosen, problems
    roles = role_names()
    problems += [
        f"agents: {quoted(r)} is not a role; use one of {', '.join(roles)}, or {HUMAN_ROLE} for a "
        "person's seat"
        for r in wanted
        if r not in (*roles, HUMAN_ROLE)
    ]
    return [AgentEntry(id=r, role=r) for r in wanted], problems
