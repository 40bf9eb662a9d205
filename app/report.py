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
    return {
        "problem": values.get("problem", ""),
        "agents": values.get("agents", []),
        "judge": values.get("judge"),
        "rounds": values.get("rounds"),
        "transcript": values.get("transcript", []),
        "summaries": values.get("summaries", {}),
        "summary_log": values.get("summary_log", []),
        "judge_summary": values.get("judge_summary"),
        "solution": values.get("solution"),
    }


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
    lines += ["## Agents", "", "| id | role | model | temperature |", "|---|---|---|---|"]
    for agent in [*values.get("agents", []), *([values["judge"]] if values.get("judge") else [])]:
        lines.append(f"| {_cell(agent['id'])} | {agent['role']} | `{_cell(agent['model'])}` | {agent['temperature']} |")
    clarifications = [t for t in transcript if t["kind"] == "clarification"]
    if clarifications:
        lines += ["", "## Clarifications", ""]
        for turn in clarifications:
            lines += [f"**{turn['speaker']}**", "", _quote(turn["content"]), ""]
    rounds = sorted({t["round"] for t in transcript if t["round"] > 0})
    for r in rounds:
        lines += ["", f"## Round {r}"]
        for kind, title in (("proposal", "Proposals"), ("critique", "Critiques"), ("refinement", "Refinements")):
            turns = [t for t in transcript if t["round"] == r and t["kind"] == kind]
            if not turns:
                continue
            lines += ["", f"### {title}", ""]
            for turn in turns:
                who = f"{turn['speaker']} on {turn['target']}" if turn.get("target") else turn["speaker"]
                note = " (carried over from the previous refinement)" if turn.get("carried_from") else ""
                seen = turn.get("view") or {}
                audit = (
                    f" · saw {len(seen.get('turn_ids', []))} turns, summary {seen.get('summary_id') or 'none'}, {seen.get('prompt_tokens', 0)} prompt tokens"
                    if seen
                    else ""
                )
                lines += [f"#### {who}{note}", "", f"*{turn['tokens']} tokens{audit}*", "", _quote(turn["content"]), ""]
    log = values.get("summary_log", [])
    if log:
        lines += [
            "",
            "## Summaries",
            "",
            "| id | agent | round | depth | strategy | reason | tokens before → after | status |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for s in log:
            lines.append(
                f"| {s['id']} | {s['agent_id']} | {s['round']} | {s['depth']} | {s['strategy']} | {_cell(s['reason'])} "
                f"| {s['tokens_before']} → {s['tokens_after']} | {s['status']}{' (' + _cell(s['error']) + ')' if s.get('error') else ''} |"
            )
        for s in log:
            if s["status"] == "ok":
                lines += ["", f"### {s['agent_id']}, round {s['round']}", "", _quote(s["text"])]
    solution = values.get("solution")
    lines += ["", "## Final solution", ""]
    if solution:
        lines.append(_quote(solution["description"]))
        for title, key in (
            ("Key decisions", "key_decisions"),
            ("Trade-offs", "trade_offs"),
            ("Recommendations", "recommendations"),
            ("Open risks", "open_risks"),
        ):
            if solution.get(key):
                lines += ["", f"**{title}**", ""] + [f"- {_cell(item)}" for item in solution[key]]
        if solution.get("structured"):
            lines += ["", f"**Confidence:** {solution['confidence']}/100. {_cell(solution['confidence_reasons'])}"]
    else:
        lines.append("*No solution yet: the debate did not finish.*")
    lines += [
        "",
        "## Tokens and latency",
        "",
        "| agent | phase | calls | input tokens | output tokens | latency (s) |",
        "|---|---|---|---|---|---|",
    ]
    for (speaker, phase), row in sorted(totals(transcript, log).items()):
        lines.append(
            f"| {speaker} | {phase} | {row['calls']} | {row['input']} | {row['output']} | {row['latency_ms'] / 1000:.1f} |"
        )
    return "\n".join(lines) + "\n"
