"""Summaries as tasks: which perspectives are due, the jobs, the calls, and the records applied to state.

A summary is made before a phase (the conditional ``summarize`` node, when a
speaker's view could not wait) or beside the phase before it (``ahead``): what
a summary must cover is known when that phase starts, so it runs concurrently
with the phase's calls instead of adding a step to the critical path. Which
perspectives are due, what a summary reads and how it is made are memory rules
(``memory.planning``, ``memory.summarizer``); this module only plans and runs
them. The judge's perspective is kept the same way, beside the debaters'
phases, so the synthesis sees the whole debate through its summary.

It is one module because a summary task is planned, sent and applied as one
unit: the summarize node and the phases ahead of it share every function here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, cast

from langgraph.func import task

from debate_engine.calls.drive import adrive, drive
from debate_engine.calls.rate_records import RateLimits
from debate_engine.calls.road import Request
from debate_engine.calls.schemas import (
    CHARS_PER_TOKEN,
    Bounded,
    answer_schema,
    chars_for,
    list_field,
    text_field,
    tool_tokens,
)
from debate_engine.calls.spend import Reserve, worst_case
from debate_engine.config.settings import AgentProfile, RunSettings
from debate_engine.errors import SummaryError
from debate_engine.graph.state import ConversationState, FacetEntry
from debate_engine.memory import (
    JUDGE_ID,
    Decision,
    Prompt,
    StructuredSummary,
    SummaryJob,
    SummaryRecord,
    Turn,
    new_turn,
    should_summarize,
    summarize,
    summary_material,
)
from debate_engine.memory.budget import FRAME_OVERHEAD, turn_cost
from debate_engine.memory.facets import FACET_CAPS
from debate_engine.memory.perspective import Relabelled, opening_clarifications
from debate_engine.memory.records import Usage
from debate_engine.memory.summary_prompt import (
    SUMMARY_MARGIN,
    chunks,
    fold_bound,
    fold_room,
    frame,
    room,
)
from debate_engine.memory.summary_settings import resolved
from debate_engine.nodes.calls import Call, run_key, task_named
from debate_engine.nodes.schedule import TABLE_ID, Step, next_step, step_key, table_profile
from debate_engine.nodes.status import emit
from debate_engine.nodes.views import budget_of, labels_for, summaries_of
from debate_engine.prompts import load_prompt, render
from debate_engine.providers.secrets import redact

SUMMARY_TEMPERATURE_CAP = 0.3
MAX_BACKOFF = 16
RECENT_REPLIES = 32
"""Turns read back to guess how long the next replies will be."""
AHEAD = "made ahead of "
"""How the reason of a summary made beside a phase ends: this, the step it was made for, and ``)``."""


class SummarizationAborted(SummaryError, RuntimeError):
    """A summary failed and the settings say to stop (``abortOnFailure``)."""


def speakers(settings: RunSettings, step: Step) -> list[AgentProfile]:
    """Return the perspectives whose views a step shows: its speakers' (the judge's at the synthesis)."""
    if settings.get("protocol") == "roundtable":
        return [table_profile(settings)]
    if step == "synthesize":
        return [settings["judge"]]
    return list(settings["agents"])


def decisions(
    state: ConversationState,
    viewers: Sequence[AgentProfile],
    round_no: int,
    transcript: Sequence[Turn],
    key: str | None = None,
) -> list[tuple[AgentProfile, Decision]]:
    """Return the viewers whose trigger fires over ``transcript``, failures backing off.

    Only the rule that keeps a view whole (its uncovered turns must fit) decides for a perspective already
    summarized ahead of step ``key``: its other triggers were weighed when that summary was planned.
    """
    latest = summaries_of(state, viewers)
    out = []
    for profile in viewers:
        if backing_off(state.get("summary_log", []), profile["id"], round_no):
            continue
        settings = resolved(profile["summarization"])
        summary = latest.get(profile["id"])
        if key is not None and summary is not None and f"({AHEAD}{key})" in summary["reason"]:
            settings = settings.model_copy(
                update={"threshold": 0, "token_limit": 0, "trigger_ratio": 2.0, "every_n_turns": 0}
            )
        decision = should_summarize(
            transcript, profile["id"], summary, settings, budget_of(profile)
        )
        if decision.fire:
            out.append((profile, decision))
    return out


def backing_off(log: list[SummaryRecord], agent_id: str, round_no: int) -> bool:
    """After ``k`` failed summaries in a row, wait ``2**(k-1)`` rounds (turns), at most 16, before trying again.

    A model that cannot summarize would otherwise be asked on every turn the overflow rule fires.
    """
    fails, last = 0, 0
    for record in reversed(log):
        if record["agent_id"] != agent_id:
            continue
        if record["status"] == "ok":
            break
        last = last or record["round"]
        fails += 1
    return fails > 0 and round_no < last + min(2 ** (fails - 1), MAX_BACKOFF)


def ahead(state: ConversationState, name: str, calls: Sequence[Call]) -> list[SummaryCall]:
    """Return the summaries the step after this phase will want, to make beside its calls, in a fixed order.

    Each is decided on the transcript with the phase's turns projected (``projected_turn``), and made over
    the transcript as it is now: its coverage ends where the phase's turns begin. The summarize node still
    makes, before that step, whatever the projection missed.
    """
    settings, transcript = state["settings"], state.get("transcript", [])
    if not calls or settings.get("protocol") == "roundtable":
        return []  # the table's summary keeps its documented rhythm: one step in every ``summary_every`` turns
    step, round_no = next_step(
        cast(ConversationState, {**state, "phase": name, "round": calls[0].round})
    )
    if step == "done" or state.get("stopped"):
        return []
    if name == "refine" and may_stop_after(settings, round_no - 1):
        return []  # a stop after this round would skip the step they are for: the summarize node makes them if it runs
    viewers = speakers(settings, step)
    if step != "synthesize":
        viewers.append(settings["judge"])  # the judge reads everything until it synthesizes
    seen = [t["tokens"] for t in transcript[-RECENT_REPLIES:] if t["view"] is not None]
    projected = [
        *transcript,
        *(
            projected_turn(len(transcript) + i, c, max(seen, default=None))
            for i, c in enumerate(calls)
        ),
    ]
    # A summary whose failure must stop the debate is left to the summarize node: no phase's turns lost to it.
    viewers = [v for v in viewers if not resolved(v["summarization"]).abort_on_failure]
    note = f" ({AHEAD}{step_key(step, round_no)})"
    made = jobs(
        state,
        [
            (p, dataclasses.replace(d, reason=d.reason + note))
            for p, d in decisions(state, viewers, round_no, projected)
        ],
        round_no,
    )
    return [
        c for c in made if c.job.plan.turns or c.job.plan.fold
    ]  # nothing to read yet: nothing to make


def may_stop_after(settings: Any, round_no: int) -> bool:
    """Whether the stop rule may end the debate after round ``round_no``: from its ``min_round``, before the last."""
    rule = settings.get("stop_rule") or {"type": "fixed"}
    return (
        rule["type"] in ("convergence", "quality")
        and rule.get("min_round", 1) <= round_no < settings["rounds"]
    )


def projected_turn(seq: int, call: Call, longest: int | None) -> Turn:
    """Return a call's turn as it is likely to come back: as long as the longest recent reply, else its whole budget.

    Guessing short costs a step (the summarize node makes what was missed), guessing long a needless summary.
    """
    turn = new_turn(
        seq,
        kind=call.kind,
        round_no=call.round,
        speaker=call.agent["id"],
        role=call.agent["role"],
        content="",
        target=call.target,
    )
    tokens = min(longest or call.agent["max_output_tokens"], call.agent["max_output_tokens"])
    return {**turn, "tokens": tokens, "content": "x" * int(tokens * CHARS_PER_TOKEN)}


@dataclass(frozen=True)
class SummaryCall:
    """One summary to make, with the agent whose model makes it."""

    agent: AgentProfile
    job: SummaryJob
    limit: int = 0
    """Most requests at once to the agent's provider in this run (``max_concurrency``)."""
    rate_limits: RateLimits | None = None
    """The rate limits the run's settings state (``settings.rate_limits``), held by the road."""

    def reserve(self) -> list[Reserve]:
        """Return the most this summary may spend: each chunk with the summary folded in, system and task at most."""
        retries = self.job.retries  # a cut answer is asked again shorter, then in prose
        return self.least() * (1 + retries) * (1 + retries)

    def least(self) -> list[Reserve]:
        """Return one request per chunk it reads: the least a summary can be made with (no retries)."""
        job = self.job
        framed = frame(job)  # a view built once: the prompt around the turns
        fixed = framed + FRAME_OVERHEAD + SUMMARY_MARGIN
        first = job.plan.fold["tokens_after"] if job.plan.fold else 0  # a fold is read whole
        tools = tool_tokens(summary_schema(self.agent["max_output_tokens"]))
        models = (self.agent["model"], *self.agent["fallback_models"])
        # One chunk: its prompt exactly. Several: each is read in the room the summary so far leaves, never less
        # than the room beside the longest fold it can carry, so there are at most as many as that room gives,
        # each up to the window.
        parts = chunks(job.plan.turns, room(job, max(first, fold_bound(job)), framed))
        if len(parts) == 1:
            one = fixed + fold_room(job, first, framed) + sum(turn_cost(t) for t in job.plan.turns)
            prompts = [min(job.budget.total, one)]
        else:
            prompts = [job.budget.total] * len(parts)
        return [
            (models, *worst_case(prompt + tools, self.agent["max_output_tokens"]))
            for prompt in prompts
        ]

    def without_retries(self) -> SummaryCall:
        """Return the same summary with no second attempt (when the spend cap has no room for one)."""
        return dataclasses.replace(self, job=dataclasses.replace(self.job, retries=0))

    def charge(self, record: SummaryRecord) -> list[tuple[str, str, str, Usage]]:
        """Return what it spent: every attempt, priced by the model that made it."""
        attempts = record.get("attempts")
        if attempts is None:  # a record checkpointed before attempts were recorded
            usage = record["usage"] or Usage(
                input_tokens=record["tokens_before"],
                output_tokens=record["tokens_after"],
                total_tokens=0,
            )
            return [(self.agent["id"], "summarize", record["model"], usage)]
        return [
            (self.agent["id"], "summarize", a["model"], a["usage"])
            for a in attempts
            if a.get("usage")
        ]


def summary_instructions(profile: AgentProfile, length: int) -> str:
    """Return the summarizer's instructions for a target length: the agent's own prompt file, else the built-in one."""
    if profile["summary_prompt"]:
        return profile["summary_prompt"]
    who = {
        JUDGE_ID: "the judge (the whole debate)",
        TABLE_ID: "the roundtable's chair (every turn)",
    }.get(profile["id"], f"the {profile['role']} agent {profile['id']}")
    return render(load_prompt("phases/summarize"), who=who, max_length=length)


def jobs(
    state: ConversationState, wanted: Sequence[tuple[AgentProfile, Decision]], round_no: int
) -> list[SummaryCall]:
    """One summary job per perspective in ``wanted``, over the transcript as it is, in the order given."""
    calls = []
    for profile, decision in wanted:
        settings = resolved(profile["summarization"])
        budget = budget_of(profile)
        previous = summaries_of(state, [profile]).get(profile["id"])
        transcript, reader = read_by(state, profile)
        material = summary_material(transcript, reader, previous, settings, budget)
        fold_note = " and fold the previous summary into the new one" if material.plan.fold else ""
        calls.append(
            SummaryCall(
                agent=profile,
                limit=state["settings"]["max_concurrency"],
                rate_limits=state["settings"].get("rate_limits"),
                job=SummaryJob(
                    agent_id=profile["id"],
                    role=profile["role"],
                    round=round_no,
                    reason=decision.reason,
                    strategy=material.strategy,
                    plan=material.plan,
                    max_length=settings.max_length,
                    max_output_tokens=profile["max_output_tokens"],
                    budget=budget,
                    system=profile["system_prompt"],
                    instructions=partial(summary_instructions, profile),
                    instruction=render(load_prompt("phases/summarize_task"), fold_note=fold_note),
                    model_spec=profile["model"],
                    problem=state.get("problem", ""),
                    pinned=tuple(opening_clarifications(transcript)),
                ),
            )
        )
    return calls


def read_by(state: ConversationState, profile: AgentProfile) -> tuple[Sequence[Turn], str]:
    """Return the transcript as ``profile`` reads it, and its name in it: in an anonymous debate every other
    author by the letter its views show, so that no summary names who wrote what."""
    labels = labels_for(state, profile)
    if labels is None:
        return state["transcript"], profile["id"]
    return Relabelled(state["transcript"], labels), labels.get(profile["id"], profile["id"])


@lru_cache(maxsize=32)
def summary_schema(max_output_tokens: int) -> type[Bounded]:
    """Return a summary's structured form sized to its output budget: fewer, shorter facet lists when it is small."""
    count = {name: min(cap, max(1, max_output_tokens // 200)) for name, cap in FACET_CAPS.items()}
    item = min(160, max(24, int(max_output_tokens * 0.3 * CHARS_PER_TOKEN / sum(count.values()))))
    return answer_schema(
        "StructuredSummary",
        StructuredSummary.__doc__ or "",
        narrative=text_field(
            str(StructuredSummary.model_fields["narrative"].description),
            chars_for(max_output_tokens, 0.6),
        ),
        **{
            name: list_field(str(StructuredSummary.model_fields[name].description), n, item)
            for name, n in count.items()
        },
    )


def summary_request(call: SummaryCall, prompt: Prompt) -> Request:
    """Return the road's request for one of a summary's prompts: the agent's models, cooler, its tokens off the stream."""
    agent = call.agent
    return Request(
        models=(agent["model"], *agent["fallback_models"]),
        system=prompt.system,
        user=prompt.user,
        temperature=min(agent["temperature"], SUMMARY_TEMPERATURE_CAP),
        max_tokens=prompt.max_tokens,  # never more than the views can show of the summary
        timeout_s=agent["timeout_s"],
        schema=summary_schema(prompt.max_tokens) if prompt.structured else None,
        prose_fallback=False,
        retry_empty=prompt.retry,
        limit=call.limit,
        run=run_key(),
        limits=call.rate_limits,
        who=agent["id"],
        max_requests=1 + int(prompt.retry),  # what its reserve counts per prompt
        tags=("nostream", "summarizer"),
        metadata={"agent_id": agent["id"], "phase": "summarize"},
    )


def _redacted(record: SummaryRecord) -> SummaryRecord:
    if record["error"]:
        record["error"] = redact(record["error"])
    return record


def _summary_call(call: SummaryCall) -> SummaryRecord:
    """One summary (one or more model calls) as a task: durable once made; a failure is a record."""
    return _redacted(drive(summarize(call.job, emit=emit), partial(summary_request, call)))


async def _asummary_call(call: SummaryCall) -> SummaryRecord:
    """Return the async twin of :func:`summary_call`: its requests share the run's slots on the event loop."""
    return _redacted(await adrive(summarize(call.job, emit=emit), partial(summary_request, call)))


summary_call = task(task_named("summary_call", _summary_call))
asummary_call = task(task_named("summary_call", _asummary_call))


def registry_of(records: Sequence[SummaryRecord]) -> dict[str, dict[str, FacetEntry]]:
    """Return the facet registry's new entries: every item each good summary recorded, keyed case-insensitively."""
    out: dict[str, dict[str, FacetEntry]] = {}
    for record in records:
        if record["status"] != "ok":
            continue
        for name, items in record["facets"].items():
            for item in cast(list[str], items):  # every facet is a list of items
                key = " ".join(str(item).split()).casefold()
                entry = FacetEntry(
                    text=str(item),
                    first_seen=record["through"],
                    last_seen=record["through"],
                    count=1,
                )
                out.setdefault(name, {})[key] = entry
    return out


def applied(calls: Sequence[SummaryCall], records: list[SummaryRecord]) -> dict[str, Any]:
    """Return the records and their facets as a state update; stop when one failed and its settings say to abort."""
    for call, record in zip(calls, records, strict=True):
        if record["agent_id"] != call.agent["id"]:
            raise RuntimeError(
                f"summary task result for {record['agent_id']} where {call.agent['id']} was "
                "planned; the node's plan is not deterministic"
            )
        settings = resolved(call.agent["summarization"])
        if record["status"] == "failed" and settings.abort_on_failure:
            raise SummarizationAborted(
                f"summarizing {record['agent_id']} failed ({record['error']}); "
                "abortOnFailure is set"
            )
    return {"summary_log": records, "facets": registry_of(records)}
