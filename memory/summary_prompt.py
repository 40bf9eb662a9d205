"""One summary's job, the prompt it sends and the sizes it is asked to fit.

A summary is asked for what its slot in the agent's view can show
(:func:`target_length`); its turns are read in chunks as large as the room the
summary so far leaves (:func:`room`, :func:`chunks`); its prompt is the agent's
own prompt with the summarizer's instructions as the task (:func:`prompt_for`).
The procedure that sends these prompts and stores the answers is
``memory.summarizer``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from debate_engine.memory.budget import Budget, ViewRequest, build_view, turn_cost
from debate_engine.memory.identifiers import IDENTIFIER_SHARE
from debate_engine.memory.records import SummaryRecord, Turn
from debate_engine.memory.strategies import Plan
from debate_engine.memory.tokens import truncate_to_tokens

CHARS_PER_TOKEN = 2.5
"""Characters a summary may ask for per output token, leaving room for its JSON structure."""


SLOT_CHARS_PER_TOKEN = 3.0
"""Characters of prose per token of the slot a summary is shown in, conservatively (English averages about 4)."""


MIN_LENGTH = 200
"""The shortest summary asked for, however small its slot."""


MIN_ALLOWANCE = 48
"""The smallest output allowance a summary request gets, however small its room."""


SUMMARY_MARGIN = 16
"""Tokens for the folded summary's heading, beside its own share of the budget."""


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
    """Return the slot a fold reads the previous summary through: all of it, short of leaving no room for turns.

    Only a summary longer than the whole window less a chunk's minimum (made under another budget) is shown
    shortened, by the views' rule (identifiers first), and the prompt says so.
    """
    widest = job.budget.total - framed - job.budget.recent // 2 - SUMMARY_MARGIN
    return max(job.budget.summary, min(fold_tokens, widest))


def fold_bound(job: SummaryJob) -> int:
    """Return the most tokens a folded summary of this job can take: the room a view gives a summary, which
    every answer is asked within (:func:`allowance`), with its identifiers and carried facets."""
    return job.budget.summary_room + SUMMARY_MARGIN


def identifier_slot(job: SummaryJob) -> int:
    """Tokens the identifiers facet may take: its share of the slot the summary is shown in."""
    return int(job.budget.summary * IDENTIFIER_SHARE)


def facet_slot(job: SummaryJob) -> int:
    """Tokens the facets carried from earlier answers may add to a new one."""
    return job.budget.summary // 4


def frame(job: SummaryJob) -> int:
    """Tokens of a summary's prompt around its turns and folded summary: system prompt, problem, clarifications,
    the instructions at the first length asked (a retry asks a shorter one) and the headings."""
    return build_view(view_request(job, None, [], target_length(job))).record["prompt_tokens"]


def target_length(job: SummaryJob, identifier_tokens: int = 0) -> int:
    """Return the length to ask for: what the settings allow, the output limit can hold and the slot can show.

    The slot is the room the agent's own view gives a summary (its fold reads it through the same room or a
    wider one), less what the identifiers and the carried facets take there.
    """
    slot = int(text_slot(job, identifier_tokens) * SLOT_CHARS_PER_TOKEN)
    out = int(allowance(job, identifier_tokens) * CHARS_PER_TOKEN)
    return max(MIN_LENGTH, min(job.max_length, out, slot))


def text_slot(job: SummaryJob, identifier_tokens: int) -> int:
    """Tokens the model's own answer may render to: the room a view gives the summary, less the identifiers
    and the facets carried from earlier summaries (each within its share), so the whole summary is shown."""
    room = job.budget.summary_room - identifier_tokens - facet_slot(job) - SUMMARY_MARGIN
    return max(MIN_ALLOWANCE, room)


def allowance(job: SummaryJob, identifier_tokens: int) -> int:
    """Return a summary request's output allowance: never more than its answer may take in the views.

    A model may ignore the length it is asked for; none writes past its ``max_tokens``, so no summary is
    ever longer than the room it will be shown in, and none has to be cut.
    """
    return min(job.max_output_tokens, text_slot(job, identifier_tokens))


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
    max_tokens: int
    """The request's output allowance (:func:`allowance`): what the summary may take in the views."""


def view_request(
    job: SummaryJob, fold: SummaryRecord | None, part: list[Turn], length: int, framed: int = 0
) -> ViewRequest:
    """Return the agent's own prompt over ``part``, the summarizer's instructions as its task."""
    pinned = {t["seq"] for t in job.pinned}
    told = [
        t for t in part if t["seq"] not in pinned
    ]  # the clarifications are shown after the problem
    to_seq = part[-1]["seq"] + 1 if part else job.plan.through
    instructions = truncate_to_tokens(job.instructions(length), job.budget.system // 2)
    return (
        ViewRequest(  # a chunk's own clarifications must be shown; later ones never push them out
            system_prompt=job.system,
            task=f"{instructions}\n\n{job.instruction}",
            summary=fold,
            newest_first=reversed(told),
            since=part[0]["seq"] if part else to_seq,
            to_seq=to_seq,
            budget=job.budget,
            problem=job.problem,
            pinned=[t for t in job.pinned if t["seq"] < to_seq],
            summary_tokens=fold_room(job, fold["tokens_after"], framed)
            if fold
            else None,  # the fold reads it whole
        )
    )


def prompt_for(
    job: SummaryJob,
    fold: SummaryRecord | None,
    part: list[Turn],
    length: int,
    prose: bool,
    framed: int,
    max_tokens: int,
) -> Prompt:
    view = build_view(view_request(job, fold, part, length, framed))
    if not view.complete:  # never claim to cover what the model was not shown
        raise ValueError(
            f"the material did not fit one call ({view.record['turns']} of {len(part)} turns shown)"
        )
    return Prompt(view.system, view.user, not prose, job.retries > 0, max_tokens)
