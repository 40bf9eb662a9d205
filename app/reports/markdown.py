"""The debate as JSON and as a Markdown report.

Contributions are quoted (``> ``) in the report: Markdown inside them still
renders, and a code fence a model left open closes with its quote instead of
swallowing the rest of the report. A phase debate is shown round by round, a
roundtable turn by turn (one ``## Round`` section per turn would bury a long one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import TypedDict

from debate_engine.app.reports.figures import cache_phrase, duration, figures, latency
from debate_engine.app.reports.record import RunRecord, record_of
from debate_engine.app.reports.stances import stance_lines
from debate_engine.app.reports.verdict_section import positions_section, verdict_section
from debate_engine.app.reports.words import counted
from debate_engine.app.store.forking import kept_line
from debate_engine.memory.facets import registry_digest

if TYPE_CHECKING:
    from debate_engine.calls.ledger import Spend
    from debate_engine.config.settings import AgentProfile, RunSettings
    from debate_engine.graph.state import (
        Assessment,
        FacetEntry,
        ForkOrigin,
        Moderation,
        Solution,
        Status,
        StopReason,
    )
    from debate_engine.memory.records import ModelPrice, SummaryRecord, Turn

ROUND_KINDS = {"proposal": "Proposals", "critique": "Critiques", "refinement": "Refinements"}
"""What a phase debate's round holds, in order, with its section title."""
SOLUTION_PARTS: tuple[
    tuple[str, Literal["key_decisions", "trade_offs", "recommendations", "open_risks"]], ...
] = (
    ("Key decisions", "key_decisions"),
    ("Trade-offs", "trade_offs"),
    ("Recommendations", "recommendations"),
    ("Open risks", "open_risks"),
)
"""The solution's lists the report shows, in order, with their titles."""


class Export(TypedDict):
    """A debate as ``--output FILE.json`` writes it: the agents and the judge apart from the other settings,
    their prompts left out."""

    problem: str
    settings: dict[str, object]
    """The run's settings but the agents and the judge."""
    agents: list[dict[str, object]]
    """Each agent's profile without its prompts."""
    judge: dict[str, object] | None
    status: Status | None
    transcript: list[Turn]
    summary_log: list[SummaryRecord]
    solution: Solution | None
    spend: Spend | None
    stopped: str | None
    moderation: Moderation | None
    facets: dict[str, dict[str, FacetEntry]]
    stop_reason: StopReason | None
    assessments: list[Assessment]
    forked_from: ForkOrigin | None


def export_state(values: RunRecord) -> Export:
    """Return the fields a user keeps from a debate, as plain JSON-ready data."""
    settings = values.get("settings")
    return {
        "problem": values.get("problem", ""),
        "settings": (
            {k: v for k, v in settings.items() if k not in ("agents", "judge")} if settings else {}
        ),
        "agents": [_public(a) for a in settings.get("agents", [])] if settings else [],
        "judge": _public(settings["judge"]) if settings and settings.get("judge") else None,
        "status": values.get("status"),
        "transcript": values.get("transcript", []),
        "summary_log": values.get("summary_log", []),
        "solution": values.get("solution"),
        "spend": values.get("spend"),
        "stopped": values.get("stopped"),
        "moderation": values.get("moderation"),
        "facets": values.get("facets") or {},
        "stop_reason": values.get("stop_reason"),
        "assessments": values.get("assessments") or [],
        "forked_from": values.get("forked_from"),
    }


def values_from_export(data: Mapping[str, Any]) -> RunRecord:
    """Return a debate's values from its ``--output`` JSON (read from disk, untyped): the inverse of
    :func:`export_state`."""
    settings = {**(data.get("settings") or {}), "agents": data.get("agents") or []}
    if data.get("judge"):
        settings["judge"] = data["judge"]
    return record_of(
        {**{k: v for k, v in data.items() if k not in ("agents", "judge")}, "settings": settings}
    )


def _public(profile: AgentProfile) -> dict[str, object]:
    return {k: v for k, v in profile.items() if k not in ("system_prompt", "summary_prompt")}


def _quote(text: str) -> str:
    return "\n".join(
        f"> {line}" if line.strip() else ">" for line in (text or "(empty)").splitlines()
    )


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_report(values: RunRecord) -> str:
    """Render a whole debate as Markdown."""
    transcript = values.get("transcript", [])
    lines = ["# Debate report", "", "## Problem", "", _quote(values.get("problem", "")), ""]
    settings = values.get("settings")
    lines += _agents(settings) if settings else _agents_head()
    clarifications = [t for t in transcript if t["kind"] == "clarification"]
    if clarifications:
        lines += ["", "## Clarifications", ""]
        for turn in clarifications:
            lines += [f"**{turn['speaker']}**", "", _quote(turn["content"]), ""]
    if settings and settings.get("protocol") == "roundtable":
        lines += _turns(values)
    for r in sorted(
        {t["round"] for t in transcript if t["round"] > 0 and t["kind"] in ROUND_KINDS}
    ):
        lines += ["", f"## Round {r}", *_round(transcript, r)]
    lines += _summaries(values.get("summary_log", []))
    lines += _recorded(values.get("facets") or {})
    lines += positions_section(values) + stance_lines(transcript)
    lines += _solution(values.get("solution"))
    lines += verdict_section(values)
    lines += _figures(values)
    return "\n".join(lines) + "\n"


def _agents_head() -> list[str]:
    return [
        "## Agents",
        "",
        "| id | role | model | temperature | window | max output |",
        "|---|---|---|---|---|---|",
    ]


def _agents(settings: RunSettings) -> list[str]:
    lines = _agents_head()
    for a in [*settings.get("agents", []), *([settings["judge"]] if settings.get("judge") else [])]:
        lines.append(
            f"| {_cell(a['id'])} | {a['role']} | `{_cell(a['model'])}` | {a['temperature']} "
            f"| {a.get('context_window', '')} | {a.get('max_output_tokens', '')} |"
        )
    if settings.get("anonymous"):
        lines += ["", "Anonymous: the agents and the judge saw one another as Author A, B, C."]
    return lines


def _round(transcript: list[Turn], r: int) -> list[str]:
    lines: list[str] = []
    for kind, title in ROUND_KINDS.items():
        turns = [t for t in transcript if t["round"] == r and t["kind"] == kind]
        if turns:
            lines += ["", f"### {title}", ""]
        for turn in turns:
            who = (
                f"{turn['speaker']} on {turn['target']}" if turn.get("target") else turn["speaker"]
            )
            lines += [f"#### {who}", *_contribution(turn)]
    return lines


def _turns(values: RunRecord) -> list[str]:
    """Return the roundtable's conversation in order, and the moderator's last choice when it moderates."""
    lines = ["", "## Turns", ""]
    for turn in values.get("transcript", []):
        if turn["kind"] == "message":
            who = (
                turn["speaker"]
                if turn["role"] == turn["speaker"]
                else f"{turn['speaker']} ({turn['role']})"
            )
            lines += [f"### Turn {turn['round']}: {who}", *_contribution(turn)]
    choice = values.get("moderation")
    if choice:
        verdict = "; it declared the debate converged" if choice.get("converged") else ""
        lines += [
            "",
            "## Moderation",
            "",
            f"The moderator's last choice, for turn {choice['turn']}: "
            f"**{_cell(choice['speaker'])}**{verdict}.",
            "",
            _quote(choice.get("reason", "")),
        ]
    return lines


def _contribution(turn: Turn) -> list[str]:
    """One turn's figures (what its speaker saw, whether it was cut) and its text."""
    seen = turn.get("view")
    audit = (
        f" · saw {counted(seen.get('turns', 0), 'turn')} verbatim, summary {seen.get('summary_id') or 'none'}, "
        f"{seen.get('prompt_tokens', 0)} prompt tokens"
        if seen
        else ""
    )
    cut = " · **cut at the output limit**" if turn.get("truncated") else ""
    return ["", f"*{turn['tokens']} tokens{audit}{cut}*", "", _quote(turn["content"]), ""]


def _summaries(log: list[SummaryRecord]) -> list[str]:
    if not log:
        return []
    lines = [
        "",
        "## Summaries",
        "",
        "| id | agent | round | depth | calls | strategy | reason | tokens before → after "
        "| status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in log:
        error = f" ({_cell(s['error'])})" if s.get("error") else ""
        lines.append(
            f"| {s['id']} | {s['agent_id']} | {s['round']} | {s['depth']} | {s.get('calls', 1)} "
            f"| {s['strategy']} | {_cell(s['reason'])} | {s['tokens_before']} → {s['tokens_after']} "
            f"| {s['status']}{error} |"
        )
    return lines


def _recorded(registry: dict[str, dict[str, FacetEntry]]) -> list[str]:
    """Return what the summaries recorded across the whole debate, most referenced first (the judge is shown the same)."""
    digest = registry_digest(registry, per_facet=12)
    if not digest:
        return []
    lines = [
        "",
        "## Recorded across the summaries",
        "",
        "| facet | item | summaries that recorded it |",
        "|---|---|---|",
    ]
    for title, items in digest:
        lines += [f"| {title} | {_cell(text)} | {count} |" for text, count in items]
    return lines


def _solution(solution: Solution | None) -> list[str]:
    lines = ["", "## Final solution", ""]
    if not solution:
        return [*lines, "*No solution yet: the debate did not finish.*"]
    lines.append(_quote(solution["description"]))
    for title, key in SOLUTION_PARTS:
        if solution.get(key):
            lines += ["", f"**{title}**", ""] + [f"- {_cell(item)}" for item in solution[key]]
    if solution.get("structured"):
        lines += [
            "",
            f"**Confidence:** {solution['confidence']}/100. {_cell(solution['confidence_reasons'])}",
        ]
    else:
        lines += [
            "",
            "*The judge gave no structured answer (its model could not, or its answer did not parse): "
            "the solution is its plain text, with no lists and no stated confidence.*",
        ]
    return lines


def _estimated(prices: Mapping[str, ModelPrice]) -> str:
    """Which cache prices the price list lacked and the provider's published ratio stood in for."""
    named = [
        f"{spec} ({' and '.join(p['estimated']).replace('_', ' ')})"
        for spec, p in sorted(prices.items())
        if p.get("estimated")
    ]
    return (
        ("; cache prices estimated from the provider's published ratio: " + ", ".join(named))
        if named
        else ""
    )


def _prices(values: RunRecord) -> Mapping[str, ModelPrice]:
    """Return the prices the run was charged at (none before its set-up)."""
    settings = values.get("settings")
    return (settings.get("prices") or {}) if settings else {}


def _figures(values: RunRecord) -> list[str]:
    f = figures(values)
    total = f["total"]
    mean, top = latency(total["latency_ms"])
    cut = counted(len(f["cut"]), "turn") + (f": {', '.join(f['cut'][:10])}" if f["cut"] else "")
    cut += f" and {len(f['cut']) - 10} more" if len(f["cut"]) > 10 else ""
    rows = [
        ("time running", f"{duration(f['running_s'])} (model calls and the steps between them)"),
        (
            "time stopped",
            f"{duration(f['stopped_s'])} (interrupted until resumed, or waiting for answers)",
        ),
        (
            "wall time",
            duration(f["wall_s"]) + " (set-up to last step)"
            if f["wall_s"] is not None
            else "unknown",
        ),
        *([("before the fork", kept)] if (kept := kept_line(values)) else []),
        (
            "model calls",
            f"{total['calls']} ({counted(f['turn_calls'], 'turn')}, "
            + (
                f"{counted(f['moderation_calls'], 'moderator call')}, "
                if f["moderation_calls"]
                else ""
            )
            + (
                f"{counted(f['assessment_calls'], 'check by the judge', 'checks by the judge')}, "
                if f["assessment_calls"]
                else ""
            )
            + f"{counted(f['summary_calls'], 'summary call')})",
        ),
        ("prompt tokens", total["prompt"]),
        ("completion tokens", total["completion"]),
        ("total tokens", total["prompt"] + total["completion"]),
        (
            "cost",
            f"${f['cost']:.4f} as billed (prompt tokens read from the provider's cache at its cache price)"
            + _estimated(_prices(values)),
        ),
        ("cached prompt tokens", cache_phrase(f) or "0 (the provider reported none)"),
        (
            "summaries",
            f"{f['summaries']} made, {f['tokens_saved']} tokens saved (tokens before minus after)",
        ),
        (
            "retries",
            f"{counted(f['extra_summary_calls'], 'extra summary call')} (material read in parts, or a reply cut "
            "at the output limit asked again)",
        ),
        (
            "failures",
            f"{f['failed_summaries']} failed summaries; {f['failed_requests']} requests that returned "
            "nothing (refused ones bill nothing; one abandoned at its deadline is charged as estimated; a call "
            "that fails after its retries stops the run, and resume asks it again)",
        ),
        ("cut at the output limit", cut),
        ("latency per call", f"mean {mean} s, max {top} s (model time, without queue time)"),
    ]
    lines = [
        "",
        "## Figures",
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in rows],
    ]
    lines += [
        "",
        "### By agent",
        "",
        "| agent | calls | prompt tokens | completion tokens | mean latency (s) "
        "| max latency (s) |",
        "|---|---|---|---|---|---|",
    ]
    for agent, g in [*f["by_agent"].items(), ("**total**", total)]:
        lines.append(
            f"| {_cell(agent)} | {g['calls']} | {g['prompt']} | {g['completion']} "
            f"| {' | '.join(latency(g['latency_ms']))} |"
        )
    lines += [
        "",
        "### By agent and phase",
        "",
        "| agent | phase | calls | prompt tokens | completion tokens "
        "| mean latency (s) | cut at the output limit |",
        "|---|---|---|---|---|---|---|",
    ]
    order = list(f["by_agent"])
    for (agent, phase), g in sorted(f["by_phase"].items(), key=lambda kv: order.index(kv[0][0])):
        lines.append(
            f"| {_cell(agent)} | {phase} | {g['calls']} | {g['prompt']} | {g['completion']} "
            f"| {latency(g['latency_ms'])[0]} | {g['cut']} |"
        )
    return lines
