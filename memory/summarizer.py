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

A summary is asked for what its slot in the agent's view can show, and stored
whole: an answer longer than its slot is asked again shorter, then kept as it
is (views shorten it by their rule, saying so). Its identifiers facet is made
by code from the turns it covers (``memory.identifiers``). A reply cut at the
output limit is asked again shorter and in prose; any other failure becomes a
``failed`` record and the debate goes on with the previous summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, cast

from pydantic import BaseModel, Field, field_validator

from debate_engine.memory.budget import Budget, ViewRequest, build_view, turn_cost
from debate_engine.memory.facets import FACET_CAPS, empty_facets, merge_facets, render_summary
from debate_engine.memory.identifiers import IDENTIFIER_SHARE, fit, ranked
from debate_engine.memory.identifiers import line as identifier_line
from debate_engine.memory.identifiers import merge as merge_identifiers
from debate_engine.memory.records import IdentifierStats, SummaryFacets, SummaryRecord, Turn, Usage
from debate_engine.memory.strategies import Plan
from debate_engine.memory.tokens import count_tokens, truncate_to_tokens

Emit = Callable[[dict[str, Any]], None]
CHARS_PER_TOKEN = 2.5
"""Characters a summary may ask for per output token, leaving room for its JSON structure."""
SLOT_CHARS_PER_TOKEN = 3.0
"""Characters of prose per token of the slot a summary is shown in, conservatively (English averages about 4)."""
MIN_LENGTH = 200
"""The shortest summary asked for, however small its slot."""
SUMMARY_MARGIN = 16
"""Tokens for the folded summary's heading, beside its own share of the budget."""


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
    def _nonempty(cls, items: list[str]) -> list[str]:
        return [str(i) for i in items if str(i).strip()]  # whole: the caps are asked of the model, never cut


class RejectedReply(ValueError):
    """An answer the summarizer cannot store."""


class TruncatedReply(RejectedReply):
    """The model stopped at its output limit every time: the summary would be incomplete."""


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
    """Most characters to ask for (the slot the summary is shown in may ask fewer)."""
    max_output_tokens: int
    budget: Budget
    system: str
    """The agent's own system prompt: the summary's prompt opens as the agent's calls do."""
    instructions: Callable[[int], str]
    """The summarizer's instructions for a target length in characters, in the task at the prompt's end."""
    instruction: str
    model_spec: str
    retries: int = 1
    """Second attempts for a reply cut at the output limit."""
    problem: str = ""
    """The debate's problem, after the system prompt as in the agent's calls."""
    pinned: tuple[Turn, ...] = ()
    """The clarifications that open the transcript, after the problem as in the agent's calls."""


def room(job: SummaryJob, fold_tokens: int = 0, framed: int | None = None) -> int:
    """Tokens of turns one chunk may hold: the window less the prompt around them and the folded summary.

    With a fold no longer than the summary's slot, the same room as the agent's own calls have for their
    history, so that what the agent was shown in one call is summarized in one call too. A longer fold is read
    whole (a fold never cuts what it carries on), and the chunk gives way to it. ``framed`` is
    :func:`frame`, when the caller has it.
    """
    framed = frame(job) if framed is None else framed
    fold = fold_room(job, fold_tokens, framed)
    return max(job.budget.total - framed - fold - SUMMARY_MARGIN, job.budget.recent // 2)


def fold_room(job: SummaryJob, fold_tokens: int, framed: int) -> int:
    """The slot a fold reads the previous summary through: all of it, short of leaving no room for turns.

    Only a summary longer than the whole window less a chunk's minimum (made under another budget) is shown
    shortened, by the views' rule (identifiers first), and the prompt says so.
    """
    widest = job.budget.total - framed - job.budget.recent // 2 - SUMMARY_MARGIN
    return max(job.budget.summary, min(fold_tokens, widest))


def fold_bound(job: SummaryJob) -> int:
    """The most tokens a folded summary of this job can take: one whole answer, the identifiers and the
    facets carried from earlier answers (each within its share of the slot)."""
    return job.max_output_tokens + job.budget.summary + SUMMARY_MARGIN


def identifier_slot(job: SummaryJob) -> int:
    """Tokens the identifiers facet may take: its share of the slot the summary is shown in."""
    return int(job.budget.summary * IDENTIFIER_SHARE)


def facet_slot(job: SummaryJob) -> int:
    """Tokens the facets carried from earlier answers may add to a new one."""
    return job.budget.summary // 4


def frame(job: SummaryJob) -> int:
    """Tokens of a summary's prompt around its turns and folded summary: system prompt, problem, clarifications,
    the instructions at the first length asked (a retry asks a shorter one) and the headings."""
    return build_view(_request(job, None, [], target_length(job))).record["prompt_tokens"]


def target_length(job: SummaryJob, identifier_tokens: int = 0) -> int:
    """The length to ask for: what the settings allow, the output limit can hold and the slot can show.

    The slot is the summary's share of the agent's own view (its fold reads it through the same share or a
    wider one), less what the identifiers facet takes there.
    """
    slot = int(text_slot(job, identifier_tokens) * SLOT_CHARS_PER_TOKEN)
    return max(MIN_LENGTH, min(job.max_length, int(job.max_output_tokens * CHARS_PER_TOKEN), slot))


def text_slot(job: SummaryJob, identifier_tokens: int) -> int:
    """Tokens of the slot left for the model's own text once the identifiers are shown."""
    return job.budget.summary - identifier_tokens - SUMMARY_MARGIN


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


class Prompt(NamedTuple):
    """One request the summarizer needs answered: the road makes it, the summarizer never calls a model."""

    system: str
    user: str
    structured: bool
    """Ask for :class:`StructuredSummary`; an answer that does not parse comes back for the summarizer to retry."""
    retry: bool
    """Whether the road may ask again after an empty reply: the job's retries allow it."""


class Answered(Protocol):
    """What the road sends back for a :class:`Prompt`."""

    text: str
    parsed: dict[str, Any] | None
    truncated: bool
    attempts: list[Any]


Steps = Generator[Prompt, Answered, SummaryRecord]


def summarize(job: SummaryJob, emit: Emit = lambda event: None) -> Steps:
    """Summarize ``job.plan``: yield each prompt, receive its answer; return the record, ok or failed.

    The turns are read in chunks, each as large as the room the summary so far leaves (a fold is read
    whole). A failed request is thrown into the generator (with its ``attempts``); it becomes a failed record.
    """
    plan = job.plan
    stats, dropped = _identifiers(job)
    idents = ranked(stats)
    id_tokens = count_tokens(identifier_line(idents))
    tokens_before = sum(t["tokens"] for t in plan.turns) + (plan.fold["tokens_after"] if plan.fold else 0)
    chars_before = sum(len(t["content"]) for t in plan.turns) + (len(plan.fold["text"]) if plan.fold else 0)
    framed = frame(job)
    estimate = len(chunks(plan.turns, room(job, plan.fold["tokens_after"] if plan.fold else 0, framed)))
    emit({"event": "summarization_started", "agent_id": job.agent_id, "round": job.round, "reason": job.reason,
          "turns": len(plan.turns), "chunks": estimate, "tokens_before": tokens_before})
    started = time.perf_counter()
    fold, attempts, structured = plan.fold, list[Any](), True
    narrative, facets = (fold["narrative"], fold["facets"]) if fold else ("", empty_facets())
    error: str | None = None
    rest = list(plan.turns)
    while True:
        part = chunks(rest, room(job, fold["tokens_after"] if fold else 0, framed))[0]
        rest = rest[len(part):]
        try:
            narrative, new_facets, structured = yield from _part_with_retry(
                job, fold, part, attempts, id_tokens, framed, last=not rest)
        except Exception as exc:  # noqa: BLE001 - a failed summary is recorded; the debate goes on
            error = f"{type(exc).__name__}: {exc}"[:500]
            attempts.extend(getattr(exc, "attempts", None) or [])
            break
        facets = merge_facets(facets, new_facets, facet_slot(job))
        facets["identifiers"] = idents
        fold = _interim(job, fold, narrative, facets)
        if not rest:
            break
    record = _record(job, narrative, facets, error, attempts, chars_before, tokens_before, started, structured)
    if error is None:
        record["identifier_stats"], record["identifiers_dropped"] = stats, dropped
        emit({"event": "summarization_completed", "agent_id": job.agent_id, "round": job.round,
              "summary_id": record["id"], "turns": len(plan.turns), "tokens_before": tokens_before,
              "tokens_after": record["tokens_after"], "calls": record["calls"], "latency_ms": record["latency_ms"],
              "identifiers": len(idents), "identifiers_dropped": dropped})
    else:
        emit({"event": "summarization_error", "agent_id": job.agent_id, "round": job.round, "error": error})
    return record


def _identifiers(job: SummaryJob) -> tuple[IdentifierStats, int]:
    """The identifiers of everything the new summary covers, fitted to their slot, and how many did not fit.

    The previous summary's identifiers are counted as it counted them; what its slot had left out is counted
    again in the new record's dropped total, so a loss stays visible down the chain.
    """
    fold = job.plan.fold
    old = (fold.get("identifier_stats") or {}) if fold else {}
    before = (fold.get("identifiers_dropped") or 0) if fold else 0
    stats, dropped = fit(merge_identifiers(old, job.plan.turns), identifier_slot(job))
    return stats, before + dropped


def _part_with_retry(
    job: SummaryJob, fold: SummaryRecord | None, part: list[Turn], attempts: list[Any], id_tokens: int,
    framed: int, last: bool,
) -> Generator[Prompt, Answered, tuple[str, SummaryFacets, bool]]:
    """One chunk's answer, asked again when it cannot be used as it is.

    A cut reply is retried shorter and in prose (the facets then come from the fold and the identifiers);
    an unparsed one is asked again in prose. Prose because the structured form's JSON (six facet lists) is
    what overflows a small output allowance, and what a small model most often breaks. The last chunk's
    answer, the summary views will show, is asked again shorter when it is longer than its slot; when the
    second answer is no shorter, the first is kept whole (never cut) and the views shorten it, saying so.
    """
    length, prose = target_length(job, id_tokens), False
    kept: tuple[str, SummaryFacets, bool] | None = None
    kept_size = 0
    for attempt in range(job.retries + 1):
        try:
            answer = yield _prompt(job, fold, part, length, prose, framed)
        except Exception as exc:  # the request failed: an answer already in hand is kept whole
            if kept is None:
                raise
            attempts.extend(getattr(exc, "attempts", None) or [])
            return kept
        attempts.extend(answer.attempts)
        got = _answer(answer, prose)
        if got is not None:
            size = count_tokens(render_summary(got[0], got[1]))
            if not last or size <= text_slot(job, id_tokens) or attempt == job.retries:
                return got if kept is None or size < kept_size else kept
            kept, kept_size = got, size
            length = max(MIN_LENGTH, int(length * text_slot(job, id_tokens) / size * 0.9))
            continue
        if kept is not None:
            return kept
        if attempt == job.retries:
            raise TruncatedReply("the summary stopped at the output limit") if answer.truncated else RejectedReply(
                "invalid summary output: the structured answer did not parse")
        if answer.truncated:
            length = max(MIN_LENGTH, length // 2)
        prose = True
    if kept is not None:
        return kept
    raise AssertionError("unreachable")


def _answer(answer: Answered, prose: bool) -> tuple[str, SummaryFacets, bool] | None:
    """The narrative and facets of a usable answer (None: cut, or not parsed when structure was asked)."""
    if answer.truncated:
        return None
    if answer.parsed is not None:
        parsed = StructuredSummary.model_validate(answer.parsed)
        facets = SummaryFacets(**parsed.model_dump(exclude={"narrative"}))  # type: ignore[typeddict-item]
        return parsed.narrative.strip(), facets, True
    return (answer.text, empty_facets(), False) if prose else None


def _request(
    job: SummaryJob, fold: SummaryRecord | None, part: list[Turn], length: int, framed: int = 0
) -> ViewRequest:
    """The agent's own prompt over ``part``, the summarizer's instructions as its task."""
    pinned = {t["seq"] for t in job.pinned}
    told = [t for t in part if t["seq"] not in pinned]  # the clarifications are shown after the problem
    to_seq = part[-1]["seq"] + 1 if part else job.plan.through
    instructions = truncate_to_tokens(job.instructions(length), job.budget.system // 2)
    return ViewRequest(  # a chunk's own clarifications must be shown; later ones never push them out
        system_prompt=job.system, task=f"{instructions}\n\n{job.instruction}", summary=fold,
        newest_first=reversed(told), since=part[0]["seq"] if part else to_seq, to_seq=to_seq, budget=job.budget,
        problem=job.problem, pinned=[t for t in job.pinned if t["seq"] < to_seq],
        summary_tokens=fold_room(job, fold["tokens_after"], framed) if fold else None,  # the fold reads it whole
    )


def _prompt(
    job: SummaryJob, fold: SummaryRecord | None, part: list[Turn], length: int, prose: bool, framed: int
) -> Prompt:
    view = build_view(_request(job, fold, part, length, framed))
    if not view.complete:  # never claim to cover what the model was not shown
        raise ValueError(f"the material did not fit one call ({view.record['turns']} of {len(part)} turns shown)")
    return Prompt(view.system, view.user, structured=not prose, retry=job.retries > 0)


def _interim(job: SummaryJob, fold: SummaryRecord | None, narrative: str, facets: SummaryFacets) -> SummaryRecord:
    text = render_summary(narrative, facets)
    base = fold or cast(SummaryRecord, {"id": f"interim-{job.agent_id}", "depth": 0, "parent_id": None})
    return cast(SummaryRecord, {**base, "text": text, "narrative": narrative, "facets": facets,
                                "tokens_after": count_tokens(text)})


def _record(
    job: SummaryJob, narrative: str, facets: SummaryFacets, error: str | None, attempts: list[Any],
    chars_before: int, tokens_before: int, started: float, structured: bool,
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
        reason=job.reason + ("; depth cap: the chain restarts from a summary of itself" if plan.restarted else ""),
        structured=structured,
        error=error,
        latency_ms=int((time.perf_counter() - started) * 1000),
        usage=usage,
        model=next((a["model"] for a in reversed(attempts) if a["outcome"] in ("ok", "cut")), job.model_spec),
        created_at=time.time(),
        attempts=attempts,
    )


def total_usage(attempts: list[Any]) -> Usage | None:
    """What a summary's attempts spent together (None when nothing came back)."""
    used = [a["usage"] for a in attempts if a.get("usage")]
    if not used:
        return None
    keys = dict.fromkeys(k for u in used for k in u)  # the cached-token counts too, where a provider reported them
    return Usage(**{k: sum(u.get(k, 0) for u in used) for k in keys})  # type: ignore[typeddict-item]
