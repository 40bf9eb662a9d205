"""``debate eval``: evaluator agents score a finished debate's solution by a rubric.

Each evaluator gets the rubric (``prompts/phases/evaluate.md``), the problem,
the clarifications, the debate (verbatim when it fits, else the judge's
summary and the newest turns) and the solution, all within its model's
budget, and answers through a tool call whose arguments are one
:class:`Evaluation`. A reply that does not parse marks that evaluator failed;
it never counts in the averages.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, create_model, field_validator

from debate_engine.calls.road import CallFailed, Request, aask
from debate_engine.calls.schemas import tool_tokens
from debate_engine.config.file import AgentEntry, ConfigError, load_config
from debate_engine.memory import (
    JUDGE_ID,
    BudgetError,
    count_messages,
    count_tokens,
    latest_summaries,
    make_budget,
    truncate_to_tokens,
)
from debate_engine.memory.summarizer import total_usage
from debate_engine.nodes.synthesize import render_solution
from debate_engine.nodes.views import DEBATER_KINDS
from debate_engine.prompts import load_prompt, read_prompt_file, render
from debate_engine.providers.factory import (
    ModelConfigError,
    context_window,
    default_model,
    parse_spec,
    spec_from_config,
)

CRITERIA = {
    "functional_completeness": "functional completeness",
    "performance_scalability": "performance and scalability",
    "security": "security",
    "maintainability": "maintainability",
    "regulatory_compliance": "regulatory compliance",
    "testability": "testability",
    "overall": "overall",
}
"""Field name: label, in the order of the rubric."""
SYSTEM_PROMPT = (
    "You are an impartial senior reviewer of software designs. You score strictly by the rubric "
    "you are given, and every score rests on evidence in the solution."
)
EVAL_OUTPUT_TOKENS = 1024
"""Most tokens reserved for an evaluator's answer (seven justifications and scores), at most a quarter of its window."""
EVAL_TIMEOUT_S = 300.0
MIN_MATERIAL = 200
"""Fewest tokens left for problem, debate and solution after the rubric: below, the evaluator cannot judge."""
JUSTIFICATION_CHARS = 240
"""Advised in the tool schema, not enforced on parsing: a grammar-constrained server (the embedded model's)
closes each justification there, so seven of them and the scores fit the output reserve."""


def _score_schema(schema: dict[str, Any]) -> None:
    """Scores as an enum of 1..10: grammar-constrained servers honour enums, not minimum and maximum."""
    schema.pop("minimum", None)
    schema.pop("maximum", None)
    schema["enum"] = list(range(1, 11))


def _fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, label in CRITERIA.items():
        fields[f"{name}_justification"] = (
            str,
            Field(
                description=f"Evidence for the {label} score, one to three sentences.",
                json_schema_extra={"minLength": 20, "maxLength": JUSTIFICATION_CHARS},
            ),
        )
        fields[name] = (
            int,
            Field(
                ge=1,
                le=10,
                strict=True,
                description=f"{label.capitalize()}: 1 to 10 by the rubric.",
                json_schema_extra=_score_schema,
            ),
        )
    return fields


_FIRST_WORDS = "|".join(sorted({c.split("_")[0] for c in CRITERIA}))
SCHEMA_DEBRIS = re.compile(
    rf'^\s*[,:{{}}\[\]]|"\w+"\s*:|\b(?:{_FIRST_WORDS})\w*"?\s*:\s*\d', re.IGNORECASE
)
"""What a justification that is really a piece of the JSON around it shows: an opening comma, colon or bracket, a
``"key":``, a criterion's ``name: 2`` (an embedded model once justified 10/10 with ``", overall_scalabilty: 2, "``)."""


class _Answer(BaseModel):
    """The checks every evaluator's answer passes before it is scored."""

    @field_validator("*", mode="after")
    @classmethod
    def _evidence(cls, value: Any, info: Any) -> Any:
        """Return a justification must be prose: at least 20 characters and four words, no debris of the schema."""
        if str(info.field_name).endswith("_justification"):
            text = value.strip()
            if (
                len(text) < 20
                or len(re.findall(r"[^\W\d_]{2,}", text)) < 4
                or SCHEMA_DEBRIS.search(text)
            ):
                raise ValueError(f"not a justification: {text[:60]!r}")
        return value


Evaluation: type[BaseModel] = create_model(
    "Evaluation", __doc__="Score the solution on every criterion.", __base__=_Answer, **_fields()
)


@dataclass(frozen=True)
class Evaluator:
    """One evaluator as configured: its models (fallbacks after the first) and its budget."""

    id: str
    models: tuple[str, ...]
    temperature: float
    context_window: int
    max_output_tokens: int
    system_prompt: str
    chosen: str = ""
    """Why this model: ``--model``, its config entry, the debate's judge model, or the default."""


def evaluators_of(
    config: str | None, model: str | None, judge_model: str | None = None
) -> list[Evaluator]:
    """Return the config's enabled ``evaluators``, else one; each on ``model``, else its own, else ``judge_model``.

    The debate's own judge model is the natural default: it is the model the
    user chose for this debate, where the environment's default may be another.
    """
    entries = [e for e in (load_config(config).evaluators if config else []) if e.enabled]
    if not entries:
        entries = [AgentEntry(id="evaluator", temperature=0.2)]
    out, problems, seen = [], [], set()
    for i, entry in enumerate(entries):
        where = f"evaluators[{i}]"
        ident = entry.id or f"evaluator{i + 1}"
        if ident in seen:
            problems.append(f"{where}.id: {ident!r} is used twice; give each evaluator a unique id")
        seen.add(ident)
        own = spec_from_config(entry.model, entry.provider)
        chosen = (
            "--model"
            if model
            else "its config"
            if own
            else "the debate's judge model"
            if judge_model
            else "the default model"
        )
        specs = (model or own or judge_model or default_model(), *(entry.fallback_models or []))
        try:
            for spec in specs:
                parse_spec(spec)
            window = context_window(specs[0], entry.context_window)
            output = entry.max_output_tokens or min(EVAL_OUTPUT_TOKENS, window // 4)
            make_budget(window, output)
        except (ModelConfigError, BudgetError) as exc:
            problems.append(f"{where} ({ident}): {exc}")
            continue
        system = (
            read_prompt_file(entry.system_prompt_path, f"systemPromptPath of {ident}")
            or SYSTEM_PROMPT
        )
        out.append(Evaluator(ident, specs, entry.temperature, window, output, system, chosen))
    if problems:
        raise ConfigError(problems)
    return out


def _turn_text(turn: dict[str, Any]) -> str:
    on = f" on {turn['target']}" if turn.get("target") else ""
    return f"[round {turn['round']}] {turn['kind']} by {turn['speaker']}{on}:\n{turn['content']}"


def debate_material(values: dict[str, Any], limit: int) -> str:
    """Return the debate within ``limit`` tokens: verbatim when it fits, else the summaries and the newest turns."""
    turns = [t for t in values.get("transcript", []) if t["kind"] in DEBATER_KINDS]
    whole = "\n\n".join(_turn_text(t) for t in turns) or "(no turns)"
    if count_tokens(whole) <= limit:
        return whole
    log = values.get("summary_log", [])
    found = latest_summaries(log, [JUDGE_ID]) or latest_summaries(
        log, {t["speaker"] for t in turns}
    )
    head, rest = "", turns
    if found:
        through = min(r["through"] for r in found.values())
        head = "\n\n".join(
            f"Summary of the debate as {r['agent_id']} saw it, up to turn {r['through']}:\n{r['text']}"
            for r in found.values()
        )
        head = truncate_to_tokens(head, limit // 2)
        rest = [t for t in turns if t["seq"] >= through]
    room = limit - count_tokens(head) - 24
    kept: list[str] = []
    for turn in reversed(rest):
        text = _turn_text(turn)
        if count_tokens(text) + 2 > room:
            break
        kept.insert(0, text)
        room -= count_tokens(text) + 2
    left_out = len(rest) - len(kept)
    note = f"[{left_out} earlier turns left out to fit the window]" if left_out else ""
    return "\n\n".join(p for p in (head, note, *kept) if p)


def _clarifications(values: dict[str, Any]) -> str:
    turns = [t for t in values.get("transcript", []) if t["kind"] == "clarification"]
    return "\n\n".join(f"{t['speaker']}:\n{t['content']}" for t in turns) or "(none)"


def build_prompt(values: dict[str, Any], evaluator: Evaluator) -> tuple[str, str, int]:
    """System and user prompt within the evaluator's budget, and their tokens (the tool schema included)."""
    total = make_budget(evaluator.context_window, evaluator.max_output_tokens).total
    template = render(
        load_prompt("phases/evaluate"),
        rubric=load_prompt("phases/rubric"),
        problem="{problem}",
        clarifications="{clarifications}",
        debate="{debate}",
        solution="{solution}",
    )
    system = evaluator.system_prompt
    fixed = count_messages(
        system, render(template, problem="", clarifications="", debate="", solution="")
    )
    room = total - fixed - tool_tokens(Evaluation) - 16
    if room < MIN_MATERIAL:
        raise BudgetError(
            f"evaluator {evaluator.id}: a window of {evaluator.context_window} tokens with "
            f"{evaluator.max_output_tokens} reserved for the answer leaves {room} for the debate after "
            "the rubric; raise its contextWindow or lower its maxOutputTokens"
        )
    parts = {
        "problem": truncate_to_tokens(values.get("problem", ""), room // 6),
        "solution": truncate_to_tokens(render_solution(values["solution"]), room * 2 // 5),
        "clarifications": truncate_to_tokens(_clarifications(values), room // 10),
    }
    left = room - sum(count_tokens(p) for p in parts.values())
    parts["debate"] = debate_material(values, left)
    user = render(template, **parts)
    while (used := count_messages(system, user) + tool_tokens(Evaluation)) > total and parts[
        "debate"
    ]:  # joins re-tokenize
        parts["debate"] = truncate_to_tokens(
            parts["debate"], count_tokens(parts["debate"]) - (used - total) - 4
        )
        user = render(template, **parts)
    return system, user, used


def _request(evaluator: Evaluator, prompt: tuple[str, str, int], run: str) -> Request:
    system, user, _ = prompt
    return Request(
        models=tuple(evaluator.models),
        system=system,
        user=user,
        temperature=evaluator.temperature,
        max_tokens=evaluator.max_output_tokens,
        timeout_s=EVAL_TIMEOUT_S,
        schema=Evaluation,
        prose_fallback=False,
        run=run,
        who=f"evaluator {evaluator.id}",
        tags=("evaluator", evaluator.id),
    )


async def evaluate_one(
    evaluator: Evaluator, prompt: tuple[str, str, int], run: str = "eval"
) -> dict[str, Any]:
    """One evaluator's record: ``ok`` with its criteria, or ``failed`` with the reason."""
    record: dict[str, Any] = {
        "id": evaluator.id,
        "model": evaluator.models[0],
        "status": "failed",
        "error": None,
        "criteria": {},
        "prompt_tokens": prompt[2],
        "usage": None,
        "latency_ms": 0,
        "truncated": False,
        "attempts": [],
    }
    try:
        answer = await aask(_request(evaluator, prompt, run))
    except CallFailed as exc:
        record.update(error=str(exc), attempts=exc.attempts)
        return record
    record.update(
        model=answer.model,
        usage=total_usage(answer.attempts),
        latency_ms=answer.latency_ms,
        truncated=answer.truncated,
        attempts=answer.attempts,
    )
    if answer.parsed is not None:
        data = answer.parsed
        record["status"] = "ok"
        record["criteria"] = {
            c: {"score": data[c], "justification": data[f"{c}_justification"]} for c in CRITERIA
        }
    elif answer.truncated:
        record["error"] = (
            f"the reply stopped at the output limit ({evaluator.max_output_tokens} tokens) unfinished"
        )
    else:
        record["error"] = (
            "the reply could not be parsed: no tool call, and no JSON in its text, matched the rubric"
        )
    return record


def averages(records: list[dict[str, Any]]) -> dict[str, float | None]:
    """Return the mean score per criterion over the evaluators that parsed (None when none did)."""
    ok = [r for r in records if r["status"] == "ok"]
    return {
        c: round(sum(r["criteria"][c]["score"] for r in ok) / len(ok), 2) if ok else None
        for c in CRITERIA
    }


async def evaluate(
    values: dict[str, Any],
    evaluators: list[Evaluator],
    source: str,
    on_start: Callable[[Evaluator], None] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Every evaluator at once (the embedded model one at a time), and the averages.

    Every prompt is built first, so a window too small for the rubric stops the command before any call;
    then ``on_start`` hears of each evaluator, and ``on_done`` of each record as it ends.
    """
    prompts = [build_prompt(values, e) for e in evaluators]
    if on_start:
        for evaluator in evaluators:
            on_start(evaluator)
    run = f"eval:{source}"  # the evaluators share this run's provider slots (the embedded server: one)

    async def one(evaluator: Evaluator, prompt: tuple[str, str, int]) -> dict[str, Any]:
        record = await evaluate_one(evaluator, prompt, run)
        if on_done:
            on_done(record)
        return record

    records = list(
        await asyncio.gather(*(one(e, p) for e, p in zip(evaluators, prompts, strict=True)))
    )
    return {
        "source": source,
        "problem": (values.get("problem", "").strip().splitlines() or [""])[0][:200],
        "evaluated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "criteria": list(CRITERIA),
        "evaluators": records,
        "averages": averages(records),
        "parsed": sum(r["status"] == "ok" for r in records),
        "failed": sum(r["status"] != "ok" for r in records),
    }
