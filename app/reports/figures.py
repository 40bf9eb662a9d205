"""A debate's figures from its state: calls, tokens, time running and stopped, by agent and phase.

One source of truth: calls and tokens are the state's spend (every request the
provider answered, with its own usage), and the rows by agent and phase are
the turns' and summaries' records counted by the spend's rule, so they add up
to it. The final line, the report and a resumed run's progress read them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import TypedDict

from debate_engine.nodes.status import spent

if TYPE_CHECKING:
    from debate_engine.app.reports.record import RunRecord

PHASES = (
    "clarification",
    "proposal",
    "critique",
    "refinement",
    "message",
    "moderation",
    "assessment",
    "synthesis",
    "summary",
)
"""The order phases are listed in."""
K = TypeVar("K")
"""What a group of rows is keyed by: an agent, an agent and a phase, or ``total``."""


class Counts(TypedDict):
    """Calls, tokens and latencies added up: an agent's, an agent's in a phase, or the debate's."""

    calls: int
    prompt: int
    completion: int
    latency_ms: list[int]
    cut: int
    """Turns cut at the output limit."""


class FigureRow(Counts):
    """One call's row (a turn's, a summary's, or the spend's for calls that wrote no record)."""

    agent: str
    phase: str


class Billed(TypedDict):
    """Dollars as billed and the provider's prompt cache."""

    cost: float
    cached_tokens: int
    cache_write_tokens: int
    saved: float


class Figures(Billed):
    """What a debate cost: times, calls, tokens, summaries, retries, failures; by agent, by phase."""

    wall_s: float | None
    """Set-up to the last step; None before set-up."""
    running_s: float
    stopped_s: float
    total: Counts
    turn_calls: int
    moderation_calls: int
    assessment_calls: int
    summary_calls: int
    summaries: int
    failed_summaries: int
    tokens_saved: int
    extra_summary_calls: int
    failed_requests: int
    cut: list[str]
    """The ids of the turns cut at the output limit."""
    by_agent: dict[str, Counts]
    by_phase: dict[tuple[str, str], Counts]


class Totals(TypedDict):
    """The debate's figures in a line's worth (dollars and seconds rounded)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float
    summary_calls: int
    cached_tokens: int
    cache_write_tokens: int
    saved: float
    running_s: float
    stopped_s: float


def _counts() -> Counts:
    return Counts(calls=0, prompt=0, completion=0, latency_ms=[], cut=0)


def _row(agent: str, phase: str, record: Mapping[str, Any], cut: int = 0) -> FigureRow:
    """One call's row: its charged requests (the spend's rule), their tokens and latencies.

    ``record`` is a turn or a summary as stored, by this version or an older one (whose keys the
    types no longer name): it is read as the stored mapping it is.
    """
    cost, attempts = spent(record), record.get("attempts")
    if attempts is not None:
        latency = [a.get("latency_ms", 0) for a in attempts if a.get("usage")]
    elif (
        "calls" in record or not cost["requests"]
    ):  # a record from before attempts (or usage) were kept
        usage, view, calls = (
            record.get("usage") or {},
            record.get("view") or {},
            record.get("calls", 1),
        )
        cost = {
            "requests": calls,
            "input_tokens": usage.get("input_tokens", view.get("prompt_tokens", 0)),
            "output_tokens": usage.get("output_tokens", record.get("tokens", 0) if view else 0),
        }
        latency = [record.get("latency_ms", 0) // calls] * calls if calls else []
    else:
        latency = [record.get("latency_ms", 0)]
    return {
        "agent": agent,
        "phase": phase,
        "calls": cost["requests"],
        "prompt": cost["input_tokens"],
        "completion": cost["output_tokens"],
        "latency_ms": latency,
        "cut": cut,
    }


def own_part(values: RunRecord) -> RunRecord:
    """Return a fork's own records: the turns and summaries after the ones it kept (``forked_from``), which the
    original made and paid for. A debate that is no fork is all its own."""
    kept = values.get("forked_from")
    if not kept or (not kept.get("turns") and not kept.get("summaries")):
        return values
    return {
        **values,
        "transcript": values.get("transcript", [])[kept.get("turns", 0) :],
        "summary_log": values.get("summary_log", [])[kept.get("summaries", 0) :],
    }


def calls_of(values: RunRecord) -> list[FigureRow]:
    """One row per model-written turn and per summary: agent, phase, requests, tokens in and out, latencies.

    The roundtable moderator's choices and the judge's checks after a round write no turn: one row holds
    each kind, from the spend record. Calls
    that left no record (clarifying questions that asked none) make one more row, so the rows add up to the
    state's spend, which counts every request the provider answered.
    """
    rows = [
        _row(t["speaker"], t["kind"], t, int(bool(t.get("truncated"))))
        for t in values.get("transcript", [])
        if t.get("model") is not None
    ]
    rows += [_row(r["agent_id"], "summary", r) for r in values.get("summary_log", [])]
    spend = values.get("spend")
    settings = values.get("settings")
    judge = settings["judge"].get("id", "judge") if settings and settings.get("judge") else "judge"
    for phase, label in (("moderate", "moderation"), ("assess", "assessment")):
        made = ((spend.get("by_phase") or {}) if spend else {}).get(phase)
        if made:
            rows.append(
                {
                    "agent": judge,
                    "phase": label,
                    "calls": made["calls"],
                    "prompt": made["input_tokens"],
                    "completion": made["output_tokens"],
                    "latency_ms": [],
                    "cut": 0,
                }
            )
    if spend and spend.get("total"):
        calls = spend["total"]["calls"] - sum(r["calls"] for r in rows)
        prompt = spend["total"]["input_tokens"] - sum(r["prompt"] for r in rows)
        completion = spend["total"]["output_tokens"] - sum(r["completion"] for r in rows)
        if calls or prompt or completion:
            rows.append(
                {
                    "agent": "(none)",
                    "phase": "without a record",
                    "calls": calls,
                    "prompt": prompt,
                    "completion": completion,
                    "latency_ms": [],
                    "cut": 0,
                }
            )
    return rows


def _add(groups: dict[K, Counts], key: K, row: FigureRow) -> None:
    group = groups.setdefault(key, _counts())
    group["calls"] += row["calls"]
    group["prompt"] += row["prompt"]
    group["completion"] += row["completion"]
    group["cut"] += row["cut"]
    group["latency_ms"] += row["latency_ms"]


SET_UP_S = 5.0
"""Time a step may take beyond its calls' own (a process starting, a graph compiling, views being built)."""
SAME_STEP_S = 1.0
"""Records made this close together were made by one step."""


def timeline(values: RunRecord) -> tuple[float, float]:
    """Seconds the debate ran and seconds it stood stopped (interrupted, or waiting for answers).

    Every turn and summary is recorded when its calls end, with the calls' latencies. Between one step's
    records and the next, the debate needed at most the later step's latencies (twice over, for a
    moderator's choice that leaves no record) and a few seconds; a longer gap is a stop, of which the step
    ran only for its calls.
    """
    status = values.get("status")
    if not status:
        return 0.0, 0.0
    records: list[Mapping[str, Any]] = [
        *values.get("transcript", []),
        *values.get("summary_log", []),
    ]
    marks = sorted(
        (r["created_at"], sum(_row("", "", r)["latency_ms"]) / 1000)
        for r in records
        if r.get("created_at") and (r.get("model") or r.get("agent_id"))
    )
    steps: list[list[float]] = []
    for at, need in marks:
        if steps and at - steps[-1][0] < SAME_STEP_S:
            steps[-1] = [at, steps[-1][1] + need]
        else:
            steps.append([at, need])
    running = stopped = 0.0
    last = status["started_at"]
    for at, need in [*steps, [status["updated_at"], 0.0]]:
        gap = max(0.0, at - last)
        ran = (
            gap if gap <= 2 * need + SET_UP_S else need
        )  # a stop: the step ran for its calls, no longer
        running, stopped, last = running + ran, stopped + gap - ran, max(last, at)
    return running, stopped


def figures(values: RunRecord) -> Figures:
    """Return what a debate cost: time running and stopped, calls, tokens, summaries, retries, failures, latency.

    Calls and tokens are the state's spend (every request the provider answered, with its own usage);
    the breakdowns by agent and phase add up to it. A fork's figures are its own (``own_part``).
    """
    values = own_part(values)
    rows = calls_of(values)
    by_agent: dict[str, Counts] = {}
    by_phase: dict[tuple[str, str], Counts] = {}
    total: dict[str, Counts] = {}
    for row in sorted(
        rows, key=lambda r: PHASES.index(r["phase"]) if r["phase"] in PHASES else len(PHASES)
    ):
        _add(by_agent, row["agent"], row)
        _add(by_phase, (row["agent"], row["phase"]), row)
        _add(total, "total", row)
    log = values.get("summary_log", [])
    ok = [r for r in log if r["status"] == "ok"]
    status = values.get("status")
    running, stopped = timeline(values)
    attempts = [a for r in [*values.get("transcript", []), *log] for a in r.get("attempts") or []]
    return {
        "wall_s": max(0.0, status["updated_at"] - status["started_at"]) if status else None,
        "running_s": running,
        "stopped_s": stopped,
        "total": total.get("total") or _counts(),
        "turn_calls": sum(
            r["calls"] for r in rows if r["phase"] not in ("summary", "moderation", "assessment")
        ),
        "moderation_calls": sum(r["calls"] for r in rows if r["phase"] == "moderation"),
        "assessment_calls": sum(r["calls"] for r in rows if r["phase"] == "assessment"),
        "summary_calls": sum(r["calls"] for r in rows if r["phase"] == "summary"),
        "summaries": len(ok),
        "failed_summaries": len(log) - len(ok),
        "tokens_saved": sum(r["tokens_before"] - r["tokens_after"] for r in ok),
        "extra_summary_calls": sum(max(r.get("calls", 1) - 1, 0) for r in ok),
        "failed_requests": sum(1 for a in attempts if not a.get("usage")),
        **billed(values),
        "cut": [t["id"] for t in values.get("transcript", []) if t.get("truncated")],
        "by_agent": by_agent,
        "by_phase": by_phase,
    }


def billed(values: RunRecord) -> Billed:
    """Dollars as billed, and the provider's prompt cache: tokens read and written, dollars saved (the spend's)."""
    spend = values.get("spend")
    spent = spend.get("total") if spend else None
    if not spent:
        return {"cost": 0.0, "cached_tokens": 0, "cache_write_tokens": 0, "saved": 0.0}
    return {
        "cost": spent.get("cost", 0.0),
        "cached_tokens": spent.get("cache_read_tokens", 0),
        "cache_write_tokens": spent.get("cache_write_tokens", 0),
        "saved": spent.get("saved", 0.0),
    }


def cache_phrase(found: Billed) -> str:
    """Return the prompt cache's figures in words ("" when the provider reported none)."""
    if not found["cached_tokens"] and not found["cache_write_tokens"]:
        return ""
    written = f", {found['cache_write_tokens']} written" if found["cache_write_tokens"] else ""
    return (
        f"{found['cached_tokens']} prompt tokens cached{written}: ${found['cost']:.4f} billed, "
        f"${found['saved']:.4f} saved"
    )


def totals(values: RunRecord) -> Totals:
    """Return the debate's figures in a line's worth: what the final line and a resumed run's live line start from."""
    f = figures(values)
    t = f["total"]
    return {
        "calls": t["calls"],
        "prompt_tokens": t["prompt"],
        "completion_tokens": t["completion"],
        "tokens": t["prompt"] + t["completion"],
        "cost": round(f["cost"], 6),
        "summary_calls": f["summary_calls"],
        "cached_tokens": f["cached_tokens"],
        "cache_write_tokens": f["cache_write_tokens"],
        "saved": round(f["saved"], 6),
        "running_s": round(f["running_s"], 3),
        "stopped_s": round(f["stopped_s"], 3),
    }


def duration(seconds: float) -> str:
    """``4.2 s``, ``3 min 05 s``, ``2 h 07 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return (
        f"{minutes} min {rest:02d} s"
        if minutes < 60
        else f"{minutes // 60} h {minutes % 60:02d} min"
    )


def latency(latencies: list[int]) -> tuple[str, str]:
    """Mean and max of per-call latencies in seconds, as the report's tables print them."""
    if not latencies:
        return "0.00", "0.00"
    return f"{sum(latencies) / len(latencies) / 1000:.2f}", f"{max(latencies) / 1000:.2f}"
