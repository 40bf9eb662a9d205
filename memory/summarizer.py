"""Calling a model to summarize a perspective, in chunks when the material is long.

The model sees the previous summary (folded) and the turns to cover; when
they do not fit one prompt, the turns are read in chunks, each chunk folded
into the summary of the ones before, so the new summary has seen everything
it claims to cover. Transport errors are retried by the model client itself
(once per call, with backoff); a reply cut at the output limit is retried
once with a shorter target; any other failure becomes a ``failed`` record and
the debate goes on with the previous summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field, field_validator

from debate_engine.memory.budget import Budget, ViewRequest, build_view, turn_cost
from debate_engine.memory.facets import FACET_CAPS, empty_facets, merge_facets, render_summary
from debate_engine.memory.records import SummaryFacets, SummaryRecord, Turn, Usage
from debate_engine.memory.strategies import Plan
from debate_engine.memory.tokens import count_tokens

Emit = Callable[[dict[str, Any]], None]
CHARS_PER_TOKEN = 2.5
"""Characters a summary may ask for per output token, leaving room for its JSON structure."""


class StructuredSummary(BaseModel):
    """A summary of one agent's debate history."""

    narrative: str = Field(description="A few sentences: what was argued, by whom, and where it stands.")
    key_points: list[str] = Field(default_factory=list, description="The main arguments, one per item.")
    decisions: list[str] = Field(default_factory=list, description="What has been agreed or chosen.")
    unresolved: list[str] = Field(default_factory=list, description="Open questions and disagreements.")
    action_items: list[str] = Field(default_factory=list, description="Concrete next steps proposed.")
    participants: list[str] = Field(default_factory=list, description="Agents whose views appear.")
    domain_entities: list[str] = Field(
        default_factory=list,
        description="Identifiers to keep verbatim: file names, APIs, classes, numbers, versions.",
    )

    @field_validator(*FACET_CAPS, mode="after")
    @classmethod
    def _cap(cls, items: list[str], info: Any) -> list[str]:
        return [str(i) for i in items if str(i).strip()][: FACET_CAPS[info.field_name]]


class RejectedReply(ValueError):
    """A reply the summarizer cannot store; ``usage`` is what the rejected attempts spent."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage
        self.calls = 1


class TruncatedReply(RejectedReply):
    """The model stopped at its output limit: the summary is incomplete."""


class UnparsedReply(RejectedReply):
    """The model's structured reply did not parse (small models often break the tool-call JSON)."""


@dataclass(frozen=True)
class SummaryJob:
    """Everything one summary needs, the model aside."""

    agent_id: str
    role: str
    round: int
    reason: str
    strategy: str
    plan: Plan
    max_length: int
    """Most characters of the rendered summary."""
    max_output_tokens: int
    budget: Budget
    system_prompt: Callable[[int], str]
    """The system prompt for a target length in characters."""
    instruction: str
    model_spec: str
    retries: int = 1
    """Second attempts for a reply cut at the output limit."""


def target_length(job: SummaryJob) -> int:
    """The length to ask for: what the settings allow and the output limit can hold."""
    return max(200, min(job.max_length, int(job.max_output_tokens * CHARS_PER_TOKEN)))


def chunks(turns: Sequence[Turn], room: int) -> list[list[Turn]]:
    """Split turns, oldest first, into runs that each fit ``room`` tokens (a huge turn alone)."""
    out: list[list[Turn]] = [[]]
    used = 0
    for turn in turns:
        cost = turn_cost(turn)
        if out[-1] and used + cost > room:
            out.append([])
            used = 0
        out[-1].append(turn)
        used += cost
    return [c for c in out if c] or [[]]


def summarize(model: BaseChatModel, job: SummaryJob, emit: Emit = lambda event: None) -> SummaryRecord:
    """Summarize ``job.plan`` with ``model`` and return the record, ok or failed."""
    plan = job.plan
    parts = chunks(plan.turns, job.budget.recent)
    tokens_before = sum(t["tokens"] for t in plan.turns) + (plan.fold["tokens_after"] if plan.fold else 0)
    chars_before = sum(len(t["content"]) for t in plan.turns) + (len(plan.fold["text"]) if plan.fold else 0)
    emit({"event": "summarization_started", "agent_id": job.agent_id, "round": job.round, "reason": job.reason,
          "turns": len(plan.turns), "chunks": len(parts), "tokens_before": tokens_before})
    started = time.perf_counter()
    fold, usage, calls, structured = plan.fold, Usage(input_tokens=0, output_tokens=0, total_tokens=0), 0, True
    narrative, facets = (fold["narrative"], fold["facets"]) if fold else ("", empty_facets())
    error: str | None = None
    for part in parts:
        try:
            narrative, new_facets, structured, used, n = _call_with_retry(model, job, fold, part)
        except Exception as exc:  # noqa: BLE001 - a failed summary is recorded; the debate goes on
            error = f"{type(exc).__name__}: {exc}"[:500]
            if isinstance(exc, RejectedReply):  # the attempts were made and are paid for
                usage, calls = _add(usage, exc.usage), calls + exc.calls
            break
        calls += n
        usage = _add(usage, used)
        facets = merge_facets(facets, new_facets)
        fold = _interim(job, fold, narrative, facets)
    record = _record(job, narrative, facets, error, calls, usage, chars_before, tokens_before, started, structured)
    if error is None:
        emit({"event": "summarization_completed", "agent_id": job.agent_id, "round": job.round,
              "summary_id": record["id"], "turns": len(plan.turns), "tokens_before": tokens_before,
              "tokens_after": record["tokens_after"], "calls": calls, "latency_ms": record["latency_ms"]})
    else:
        emit({"event": "summarization_error", "agent_id": job.agent_id, "round": job.round, "error": error})
    return record


def _call_with_retry(
    model: BaseChatModel, job: SummaryJob, fold: SummaryRecord | None, part: list[Turn]
) -> tuple[str, SummaryFacets, bool, Usage | None, int]:
    """A cut reply is retried shorter and in prose, an unparsed one in prose (the facets then come from the fold).

    Prose because the structured form's JSON (six facet lists) is what overflows a
    small output allowance, and what a small model most often breaks.
    """
    length, prose, spent = target_length(job), False, None
    for attempt in range(job.retries + 1):
        try:
            narrative, facets, structured, used = _call(model, job, fold, part, length, prose)
            return narrative, facets, structured, _add(spent, used) if spent else used, attempt + 1
        except RejectedReply as exc:
            spent = _add(spent or Usage(input_tokens=0, output_tokens=0, total_tokens=0), exc.usage)
            if attempt == job.retries:
                exc.usage, exc.calls = spent, attempt + 1
                raise
            if isinstance(exc, TruncatedReply):
                length = max(200, length // 2)
            prose = True
    raise AssertionError("unreachable")


def _call(
    model: BaseChatModel, job: SummaryJob, fold: SummaryRecord | None, part: list[Turn], length: int, prose: bool
) -> tuple[str, SummaryFacets, bool, Usage | None]:
    view = build_view(ViewRequest(
        system_prompt=job.system_prompt(length), task=job.instruction, summary=fold,
        newest_first=reversed(part), since=part[0]["seq"] if part else 0,
        to_seq=part[-1]["seq"] + 1 if part else 0, budget=job.budget,
    ))
    if not view.complete:  # never claim to cover what the model was not shown
        raise ValueError(f"the material did not fit one call ({view.record['turns']} of {len(part)} turns shown)")
    messages = [SystemMessage(view.system), HumanMessage(view.user)]
    # The summarizer's tokens stay out of the `messages` stream.
    config: RunnableConfig = {"tags": ["nostream", "summarizer"], "metadata": {"agent_id": job.agent_id}}
    if prose:
        return _prose(model, messages, config)
    try:
        runnable = model.with_structured_output(StructuredSummary, method="function_calling", include_raw=True)
    except NotImplementedError:
        return _prose(model, messages, config)
    out = cast(dict[str, Any], runnable.invoke(messages, config=config))
    _check_finish(out.get("raw"))
    if out.get("parsing_error") is not None or out.get("parsed") is None:
        raise UnparsedReply(f"invalid summary output: {out.get('parsing_error') or 'nothing parsed'}",
                            usage_of(out.get("raw")))
    parsed: StructuredSummary = out["parsed"]
    facets = SummaryFacets(**parsed.model_dump(exclude={"narrative"}))  # type: ignore[typeddict-item]
    return parsed.narrative.strip(), facets, True, usage_of(out.get("raw"))


def _prose(
    model: BaseChatModel, messages: list[Any], config: RunnableConfig
) -> tuple[str, SummaryFacets, bool, Usage | None]:
    """A plain-text summary: its facets come from the fold, merged by code."""
    reply = model.invoke(messages, config=config)
    _check_finish(reply)
    return reply.text.strip(), empty_facets(), False, usage_of(reply)


def _check_finish(message: Any) -> None:
    meta = getattr(message, "response_metadata", None) or {}
    if meta.get("finish_reason") == "length":
        raise TruncatedReply("the summary stopped at the output limit", usage_of(message))


def _interim(job: SummaryJob, fold: SummaryRecord | None, narrative: str, facets: SummaryFacets) -> SummaryRecord:
    text = render_summary(narrative, facets, job.max_length)
    base = fold or cast(SummaryRecord, {"id": f"interim-{job.agent_id}", "depth": 0, "parent_id": None})
    return cast(SummaryRecord, {**base, "text": text, "narrative": narrative, "facets": facets,
                                "tokens_after": count_tokens(text)})


def _add(total: Usage, used: Usage | None) -> Usage:
    if not used:
        return total
    return Usage(**{k: total[k] + used[k] for k in total})  # type: ignore[literal-required,typeddict-item]


def _record(
    job: SummaryJob, narrative: str, facets: SummaryFacets, error: str | None, calls: int, usage: Usage,
    chars_before: int, tokens_before: int, started: float, structured: bool,
) -> SummaryRecord:
    plan = job.plan
    text = render_summary(narrative, facets, job.max_length) if error is None else ""
    return SummaryRecord(
        id=f"sum-{job.agent_id}-r{job.round}-{plan.through}",
        agent_id=job.agent_id,
        role=job.role,
        round=job.round,
        depth=plan.depth,
        parent_id=plan.parent_id,
        status="ok" if error is None else "failed",
        text=text,
        narrative=narrative,
        facets=facets,
        through=plan.through if error is None else (plan.fold["through"] if plan.fold else 0),
        calls=calls,
        chars_before=chars_before,
        chars_after=len(text),
        tokens_before=tokens_before,
        tokens_after=count_tokens(text),
        strategy=job.strategy,
        reason=job.reason + ("; depth cap: the chain restarts from a summary of itself" if plan.restarted else ""),
        structured=structured,
        error=error,
        latency_ms=int((time.perf_counter() - started) * 1000),
        usage=usage if calls else None,
        model=job.model_spec,
        created_at=time.time(),
    )


def usage_of(message: Any) -> Usage | None:
    """The provider's usage on a message, in our record's shape."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    return Usage(
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
        total_tokens=int(meta.get("total_tokens", 0)),
    )
