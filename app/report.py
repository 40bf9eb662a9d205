"""The debate as JSON and as a Markdown report.

Contributions are quoted (``> ``) in the report: Markdown inside them still
renders, and a code fence a model left open closes with its quote instead of
swallowing the rest of the report.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

PHASES = ("clarification", "proposal", "critique", "refinement", "synthesis")


def export_state(values: dict[str, Any]) -> dict[str, Any]:
    """The fields a user keeps from a debate, as plain JSON-ready data."""
    settings = values.get("settings") or {}
    return {
        "problem": values.get("problem", ""),
        "settings": {k: v for k, v in settings.items() if k not in ("agents", "judge")},
        "agents": [_public(a) for a in settings.get("agents", [])],
        "judge": _public(settings["judge"]) if settings.get("judge") else None,
        "status": values.get("status"),
        "transcript": values.get("transcript", []),
        "summary_log": values.get("summary_log", []),
        "solution": values.get("solution"),
    }


def _public(profile: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in profile.items() if k not in ("system_prompt", "summary_prompt")}


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in (text or "(empty)").splitlines())


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def totals(
    transcript: list[dict[str, Any]], summary_log: list[dict[str, Any]]
) -> dict[tuple[str, str], dict[str, int]]:
    """Tokens, calls and latency per (speaker, phase), summaries included."""
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"calls": 0, "input": 0, "output": 0, "latency_ms": 0}
    )
    for turn in transcript:
        if turn.get("model") is None and turn["kind"] != "clarification":
            continue
        row = out[(turn["speaker"], turn["kind"])]
        usage = turn.get("usage") or {}
        row["calls"] += 1
        row["input"] += usage.get("input_tokens") or (turn.get("view") or {}).get("prompt_tokens", 0)
        row["output"] += usage.get("output_tokens") or turn["tokens"]
        row["latency_ms"] += turn.get("latency_ms", 0)
    for record in summary_log:
        row = out[(record["agent_id"], "summary")]
        usage = record.get("usage") or {}
        row["calls"] += 1
        row["input"] += usage.get("input_tokens", 0)
        row["output"] += usage.get("output_tokens", 0)
        row["latency_ms"] += record.get("latency_ms", 0)
    return out


def render_report(values: dict[str, Any]) -> str:
    """Render a whole debate as Markdown."""
    transcript = values.get("transcript", [])
    lines = ["# Debate report", "", "## Problem", "", _quote(values.get("problem", "")), ""]
    lines += _agents(values.get("settings") or {})
    clarifications = [t for t in transcript if t["kind"] == "clarification"]
    if clarifications:
        lines += ["", "## Clarifications", ""]
        for turn in clarifications:
            lines += [f"**{turn['speaker']}**", "", _quote(turn["content"]), ""]
    for r in sorted({t["round"] for t in transcript if t["round"] > 0 and t["kind"] != "synthesis"}):
        lines += ["", f"## Round {r}", *_round(transcript, r)]
    lines += _summaries(values.get("summary_log", []))
    lines += _solution(values.get("solution"))
    lines += _figures(transcript, values.get("summary_log", []))
    return "\n".join(lines) + "\n"


def _agents(settings: dict[str, Any]) -> list[str]:
    lines = ["## Agents", "", "| id | role | model | temperature | window | max output |", "|---|---|---|---|---|---|"]
    for a in [*settings.get("agents", []), *([settings["judge"]] if settings.get("judge") else [])]:
        lines.append(f"| {_cell(a['id'])} | {a['role']} | `{_cell(a['model'])}` | {a['temperature']} "
                     f"| {a.get('context_window', '')} | {a.get('max_output_tokens', '')} |")
    return lines


def _round(transcript: list[dict[str, Any]], r: int) -> list[str]:
    lines: list[str] = []
    for kind, title in (("proposal", "Proposals"), ("critique", "Critiques"), ("refinement", "Refinements")):
        turns = [t for t in transcript if t["round"] == r and t["kind"] == kind]
        if turns:
            lines += ["", f"### {title}", ""]
        for turn in turns:
            who = f"{turn['speaker']} on {turn['target']}" if turn.get("target") else turn["speaker"]
            seen = turn.get("view") or {}
            audit = (f" · saw {seen.get('turns', 0)} turns verbatim, summary {seen.get('summary_id') or 'none'}, "
                     f"{seen.get('prompt_tokens', 0)} prompt tokens" if seen else "")
            cut = " · **cut at the output limit**" if turn.get("truncated") else ""
            lines += [f"#### {who}", "", f"*{turn['tokens']} tokens{audit}{cut}*", "", _quote(turn["content"]), ""]
    return lines


def _summaries(log: list[dict[str, Any]]) -> list[str]:
    if not log:
        return []
    lines = ["", "## Summaries", "", "| id | agent | round | depth | calls | strategy | reason | tokens before → after "
             "| status |", "|---|---|---|---|---|---|---|---|---|"]
    for s in log:
        error = f" ({_cell(s['error'])})" if s.get("error") else ""
        lines.append(f"| {s['id']} | {s['agent_id']} | {s['round']} | {s['depth']} | {s.get('calls', 1)} "
                     f"| {s['strategy']} | {_cell(s['reason'])} | {s['tokens_before']} → {s['tokens_after']} "
                     f"| {s['status']}{error} |")
    return lines


def _solution(solution: dict[str, Any] | None) -> list[str]:
    lines = ["", "## Final solution", ""]
    if not solution:
        return [*lines, "*No solution yet: the debate did not finish.*"]
    lines.append(_quote(solution["description"]))
    for title, key in (("Key decisions", "key_decisions"), ("Trade-offs", "trade_offs"),
                       ("Recommendations", "recommendations"), ("Open risks", "open_risks")):
        if solution.get(key):
            lines += ["", f"**{title}**", ""] + [f"- {_cell(item)}" for item in solution[key]]
    if solution.get("structured"):
        lines += ["", f"**Confidence:** {solution['confidence']}/100. {_cell(solution['confidence_reasons'])}"]
    return lines


def _figures(transcript: list[dict[str, Any]], log: list[dict[str, Any]]) -> list[str]:
    lines = ["", "## Tokens and latency", "", "| agent | phase | calls | input tokens | output tokens | latency (s) |",
             "|---|---|---|---|---|---|"]
    for (speaker, phase), row in sorted(totals(transcript, log).items()):
        lines.append(f"| {speaker} | {phase} | {row['calls']} | {row['input']} | {row['output']} "
                     f"| {row['latency_ms'] / 1000:.1f} |")
    return lines
