"""How a perspective is summarized, in chunks when the material is long: the rules, not the calls.

A summary's prompt is the agent's own prompt with another task: its system
prompt, the problem, the clarifications, the previous summary (folded) and the
turns to cover, then the summarizer's instructions last, so the model reads its
history as it argued it. (Its text begins as the agent's calls do, but it sends
its own tool, which providers cache before the messages: it shares no cache
entry with them.) When they do not fit one prompt, the turns are read in
chunks, each chunk folded into the summary of the ones before (read whole), so
the new summary has seen everything it claims to cover. :func:`summarize`
yields each prompt and receives its answer: the call road (``calls``) makes
the request, with its retries, fallbacks and prose fallback.

A summary is asked for what the agent's view can show of it, with an output
allowance no larger (a model may ignore the length asked, never its
``max_tokens``), and stored whole; views show it whole. An answer that still
renders longer than its room is asked again shorter, with a smaller allowance. Its identifiers facet is made
by code from the turns it covers (``memory.identifiers``). A reply cut at the
output limit is asked again shorter and in prose; any other failure becomes a
``failed`` record and the debate goes on with the previous summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any, Protocol, cast

from pydantic import BaseModel, Field, field_validator

from debate_engine.memory.facets import FACET_CAPS, empty_facets, merge_facets, render_summary
from debate_engine.memory.identifiers import fit, ranked
from debate_engine.memory.identifiers import line as identifier_line
from debate_engine.memory.identifiers import merge as merge_identifiers
from debate_engine.memory.records import IdentifierStats, SummaryFacets, SummaryRecord, Turn, Usage
from debate_engine.memory.summary_prompt import (
    MIN_ALLOWANCE,
    MIN_LENGTH,
    Prompt,
    SummaryJob,
    allowance,
    chunks,
    facet_slot,
    frame,
    identifier_slot,
    prompt_for,
    room,
    target_length,
    text_slot,
)
from debate_engine.memory.tokens import count_tokens

Emit = Callable[[dict[str, Any]], None]


class StructuredSummary(BaseModel):
    """A summary of one agent's debate history."""

    narrative: str = Field(
        description="A few sentences: what was argued, by whom, and where it stands."
    )
    key_points: list[str] = Field(
        default_factory=list, description="The main arguments, one per item."
    )
    decisions: list[str] = Field(
        default_factory=list, description="What has been agreed or chosen."
    )
    unresolved: list[str] = Field(
        default_factory=list, description="Open questions and disagreements."
    )
    action_items: list[str] = Field(
        default_factory=list, description="Concrete next steps proposed."
    )
    participants: list[str] = Field(default_factory=list, description="Agents whose views appear.")
    domain_entities: list[str] = Field(
        default_factory=list,
        description="Identifiers to keep verbatim: file names, APIs, classes, numbers, versions.",
    )

    @field_validator(*FACET_CAPS, mode="after")
    @classmethod
    def _nonempty(cls, items: list[str]) -> list[str]:
        return [
            str(i) for i in items if str(i).strip()
        ]  # whole: the caps are asked of the model, never cut


class RejectedReply(ValueError):
    """An answer the summarizer cannot store."""


class TruncatedReply(RejectedReply):
    """The model stopped at its output limit every time: the summary would be incomplete."""


class Answered(Protocol):
    """What the road sends back for a :class:`Prompt`."""

    text: str
    parsed: dict[str, Any] | None
    truncated: bool
    attempts: list[Any]


Steps = Generator[Prompt, Answered, SummaryRecord]
Parts = tuple[str, SummaryFacets, bool]
"""An answer's narrative, facets, and whether it was structured."""


def summarize(job: SummaryJob, emit: Emit = lambda event: None) -> Steps:
    """Summarize ``job.plan``: yield each prompt, receive its answer; return the record, ok or failed.

    The turns are read in chunks, each as large as the room the summary so far leaves (a fold is read
    whole). A failed request is thrown into the generator (with its ``attempts``); it becomes a failed record.
    """
    plan = job.plan
    stats, dropped = _identifiers(job)
    idents = ranked(stats)
    id_tokens = count_tokens(identifier_line(idents))
    tokens_before = sum(t["tokens"] for t in plan.turns) + (
        plan.fold["tokens_after"] if plan.fold else 0
    )
    chars_before = sum(len(t["content"]) for t in plan.turns) + (
        len(plan.fold["text"]) if plan.fold else 0
    )
    framed = frame(job)
    estimate = len(
        chunks(plan.turns, room(job, plan.fold["tokens_after"] if plan.fold else 0, framed))
    )
    emit(
        {
            "event": "summarization_started",
            "agent_id": job.agent_id,
            "round": job.round,
            "reason": job.reason,
            "turns": len(plan.turns),
            "chunks": estimate,
            "tokens_before": tokens_before,
        }
    )
    started = time.perf_counter()
    fold, attempts, structured = plan.fold, list[Any](), True
    narrative, facets = (fold["narrative"], fold["facets"]) if fold else ("", empty_facets())
    error: str | None = None
    rest = list(plan.turns)
    while True:
        part = chunks(rest, room(job, fold["tokens_after"] if fold else 0, framed))[0]
        rest = rest[len(part) :]
        try:
            narrative, new_facets, structured = yield from _part_with_retry(
                job, fold, part, attempts, id_tokens, framed, last=not rest
            )
        except Exception as exc:  # noqa: BLE001 - a failed summary is recorded; the debate goes on
            error = f"{type(exc).__name__}: {exc}"[:500]
            attempts.extend(getattr(exc, "attempts", None) or [])
            break
        facets = merge_facets(facets, new_facets, facet_slot(job))
        facets["identifiers"] = idents
        fold = _interim(job, fold, narrative, facets)
        if not rest:
            break
    record = _record(
        job, narrative, facets, error, attempts, chars_before, tokens_before, started, structured
    )
    if error is None:
        record["identifier_stats"], record["identifiers_dropped"] = stats, dropped
        clamped = sorted({field for a in attempts for field in a.get("clamped") or []})
        if clamped:
            record["clamped"] = clamped
        emit(
            {
                "event": "summarization_completed",
                "agent_id": job.agent_id,
                "round": job.round,
                "summary_id": record["id"],
                "turns": len(plan.turns),
                "tokens_before": tokens_before,
                "tokens_after": record["tokens_after"],
                "calls": record["calls"],
                "latency_ms": record["latency_ms"],
                "identifiers": len(idents),
                "identifiers_dropped": dropped,
            }
        )
    else:
        emit(
            {
                "event": "summarization_error",
                "agent_id": job.agent_id,
                "round": job.round,
                "error": error,
            }
        )
    return record


def _identifiers(job: SummaryJob) -> tuple[IdentifierStats, int]:
    """Return the identifiers of everything the new summary covers, fitted to their slot, and how many did not fit.

    The previous summary's identifiers are counted as it counted them; what its slot had left out is counted
    again in the new record's dropped total, so a loss stays visible down the chain.
    """
    fold = job.plan.fold
    old = (fold.get("identifier_stats") or {}) if fold else {}
    before = (fold.get("identifiers_dropped") or 0) if fold else 0
    stats, dropped = fit(merge_identifiers(old, job.plan.turns), identifier_slot(job))
    return stats, before + dropped


def _part_with_retry(
    job: SummaryJob,
    fold: SummaryRecord | None,
    part: list[Turn],
    attempts: list[Any],
    id_tokens: int,
    framed: int,
    last: bool,
) -> Generator[Prompt, Answered, Parts]:
    """One chunk's answer, asked again when it cannot be used as it is.

    A cut reply is retried shorter and in prose (the facets then come from the fold and the identifiers);
    an unparsed one is asked again in prose. Prose because the structured form's JSON (six facet lists) is
    what overflows a small output allowance, and what a small model most often breaks. The last chunk's
    answer, the summary views will show, is asked again shorter, with a smaller allowance, when it is longer
    than its room; the shortest answer is then kept whole (never cut).
    """
    length, prose, limit = target_length(job, id_tokens), False, allowance(job, id_tokens)
    too_long: list[
        tuple[int, Parts]
    ] = []  # usable answers longer than their room, with their sizes
    for attempt in range(job.retries + 1):
        try:
            answer = yield prompt_for(job, fold, part, length, prose, framed, limit)
        except Exception as exc:  # the request failed: an answer already in hand is kept whole
            if not too_long:
                raise
            attempts.extend(getattr(exc, "attempts", None) or [])
            break
        attempts.extend(answer.attempts)
        clamped = getattr(answer, "clamped", None)  # the road's answers say; a test's may not
        if answer.attempts and clamped:
            # kept whole all the same: the record says which fields went past the schema's bounds
            attempts[-1] = {**attempts[-1], "clamped": list(clamped)}
        got = _answer(answer, prose)
        if got is None:
            if too_long:
                break
            _refuse_if_last(answer, attempt == job.retries)
            length = max(MIN_LENGTH, length // 2) if answer.truncated else length
            prose = True
            continue
        size = count_tokens(render_summary(got[0], got[1]))
        if not last or size <= text_slot(job, id_tokens):
            return got
        too_long.append((size, got))
        scale = text_slot(job, id_tokens) / size * 0.9
        length = max(MIN_LENGTH, int(length * scale))
        limit = max(MIN_ALLOWANCE, int(limit * scale))  # what it cannot write past, this time
    return min(too_long, key=lambda sized: sized[0])[1]  # the shortest, whole: never a longer one


def _refuse_if_last(answer: Answered, last: bool) -> None:
    """Raise what a cut or unparsed answer means when no attempt is left."""
    if last:
        raise (
            TruncatedReply("the summary stopped at the output limit")
            if answer.truncated
            else RejectedReply("invalid summary output: the structured answer did not parse")
        )


def _answer(answer: Answered, prose: bool) -> Parts | None:
    """Return the narrative and facets of a usable answer (None: cut, or not parsed when structure was asked)."""
    if answer.truncated:
        return None
    if answer.parsed is not None:
        parsed = StructuredSummary.model_validate(answer.parsed)
        facets = SummaryFacets(
            key_points=parsed.key_points,
            decisions=parsed.decisions,
            unresolved=parsed.unresolved,
            action_items=parsed.action_items,
            participants=parsed.participants,
            domain_entities=parsed.domain_entities,
        )
        return parsed.narrative.strip(), facets, True
    return (answer.text, empty_facets(), False) if prose else None


def _interim(
    job: SummaryJob, fold: SummaryRecord | None, narrative: str, facets: SummaryFacets
) -> SummaryRecord:
    text = render_summary(narrative, facets)
    base = fold or cast(
        SummaryRecord, {"id": f"interim-{job.agent_id}", "depth": 0, "parent_id": None}
    )
    return cast(
        SummaryRecord,
        {
            **base,
            "text": text,
            "narrative": narrative,
            "facets": facets,
            "tokens_after": count_tokens(text),
        },
    )


def _record(
    job: SummaryJob,
    narrative: str,
    facets: SummaryFacets,
    error: str | None,
    attempts: list[Any],
    chars_before: int,
    tokens_before: int,
    started: float,
    structured: bool,
) -> SummaryRecord:
    plan = job.plan
    usage = total_usage(attempts)
    text = render_summary(narrative, facets) if error is None else ""
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
        calls=len(attempts),
        chars_before=chars_before,
        chars_after=len(text),
        tokens_before=tokens_before,
        tokens_after=count_tokens(text),
        strategy=job.strategy,
        reason=job.reason
        + ("; depth cap: the chain restarts from a summary of itself" if plan.restarted else ""),
        structured=structured,
        error=error,
        latency_ms=int((time.perf_counter() - started) * 1000),
        usage=usage,
        model=next(
            (a["model"] for a in reversed(attempts) if a["outcome"] in ("ok", "cut")),
            job.model_spec,
        ),
        created_at=time.time(),
        attempts=attempts,
    )


def total_usage(attempts: list[Any]) -> Usage | None:
    """Return what a summary's attempts spent together (None when nothing came back)."""
    used: list[Usage] = [a["usage"] for a in attempts if a.get("usage")]
    if not used:
        return None
    total = Usage(
        input_tokens=sum(u.get("input_tokens", 0) for u in used),
        output_tokens=sum(u.get("output_tokens", 0) for u in used),
        total_tokens=sum(u.get("total_tokens", 0) for u in used),
    )
    # The cached-token counts too, where a provider reported them.
    if any("cache_read_tokens" in u for u in used):
        total["cache_read_tokens"] = sum(u.get("cache_read_tokens", 0) for u in used)
    if any("cache_write_tokens" in u for u in used):
        total["cache_write_tokens"] = sum(u.get("cache_write_tokens", 0) for u in used)
    if any("estimated" in u for u in used):
        total["estimated"] = any(u.get("estimated", False) for u in used)
    return total
