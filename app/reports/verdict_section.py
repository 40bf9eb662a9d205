"""The report's verdict and positions: who holds what, round by round, and how the outcome was settled.

The verdict states its panel: how many distinct models and providers answered, the warning when every
agent is one model, and, for a partial panel, each missing agent with its error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from debate_engine.app.reports.record import RunRecord
    from debate_engine.graph.state import Panel, Verdict
    from debate_engine.memory.records import Turn


def _cell(text: object, limit: int = 80) -> str:
    text = " ".join(str(text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def positions_section(values: RunRecord) -> list[str]:
    """Return a table of agents by round: each stated position and its confidence, changes marked."""
    held = [t for t in values.get("transcript", []) if t.get("position")]
    if not held:
        return []
    agents = list(dict.fromkeys(t["speaker"] for t in held))
    columns = list(dict.fromkeys(_column(t) for t in held))
    cells: dict[tuple[str, str], str] = {}
    for turn in held:
        position = turn["position"]
        change = position.get("change")
        mark = ""
        if change:
            mark = (
                " (changed, toward the majority)" if change.get("toward_majority") else " (changed)"
            )
        cells[(turn["speaker"], _column(turn))] = (
            f"{_cell(position['position'], 60)} · {position['confidence']}{mark}"
        )
    lines = [
        "",
        "## Positions",
        "",
        "Each agent's stated position and confidence, as proposed and after each "
        "round; a change says whether it moved toward the position most other agents held.",
        "",
        "| agent | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    lines += [
        f"| {a} | " + " | ".join(cells.get((a, c), "") for c in columns) + " |" for a in agents
    ]
    return lines


def _column(turn: Turn) -> str:
    return (
        "proposed"
        if turn["kind"] == "proposal"
        else f"{'turn' if turn['kind'] == 'message' else 'round'} {turn['round']}"
    )


def _verdict(values: RunRecord) -> Verdict | None:
    """Return the solution's verdict; None before the synthesis, or when it made none."""
    solution = values.get("solution")
    return solution.get("verdict") if solution else None


def verdict_section(values: RunRecord) -> list[str]:
    """Return the settled outcome: the method, the winning position, agreement, every dissent verbatim, the cruxes."""
    verdict = _verdict(values)
    if not verdict:
        return []
    lines = ["", "## Verdict", "", f"- method: {verdict['method']}"]
    if verdict.get("position"):
        total = len(verdict["agreement"]) + len(verdict["dissent"])
        lines += [
            f"- position: {_cell(verdict['position'], 300)}"
            + (f" (answer: {verdict['answer']})" if verdict.get("answer") else ""),
            f"- agreement: {len(verdict['agreement'])} of {total} agents ({', '.join(verdict['agreement'])})",
        ]
    lines.append(
        f"- confidence: {verdict['confidence'].get('value')} ({verdict['confidence']['how']})"
    )
    stop = values.get("stop_reason")
    if values.get("stopped"):
        lines.append(
            f"- stopped early: {values['stopped']}"
            + (f" in round {stop['round']}: {stop['reason']}" if stop else "")
        )
    checked = checks_line(values)
    lines += [checked] if checked else []
    lines += panel_lines(verdict.get("panel"))
    for dissent in verdict.get("dissent", []):
        lines += [
            "",
            f"**Dissent: {dissent['agent']}**: {dissent['position']}",
            "",
            f"> {dissent['reason']}",
        ]
    if verdict.get("cruxes"):
        lines += ["", "**Cruxes**", "", *[f"- {_cell(c, 300)}" for c in verdict["cruxes"]]]
    return lines


def panel_lines(panel: Panel | None) -> list[str]:
    """Return the panel the verdict stands on: who answered on which models, the one-model warning, who is missing."""
    if not panel:
        return []
    lines = [f"- panel: {panel['said']}"]
    if panel.get("warning"):
        lines.append(f"- warning: {panel['warning']}")
    if panel.get("partial"):
        lines.append(f"- {panel['partial']}")
        lines += [  # the road's error names the agent, then the models it asked
            f"- missing: {_cell(m['agent'])} ({m['role']}), from round {m['round']} ({m['phase']}): "
            + _cell(m["error"].removeprefix(f"{m['agent']} on "), 500)
            for m in panel.get("missing") or []
        ]
    return lines


def verdict_line(values: RunRecord) -> str | None:
    """One line for the terminal: method, agreement, dissent and why the debate stopped."""
    verdict = _verdict(values)
    if not verdict:
        return None
    total = len(verdict["agreement"]) + len(verdict["dissent"])
    line = f"verdict ({verdict['method']}): "
    line += (
        f"{len(verdict['agreement'])} of {total} agents agree" if total else "no positions stated"
    )
    line += f", {len(verdict['dissent'])} dissent" if verdict["dissent"] else ""
    panel = verdict.get("panel")
    line += (
        f"; {panel['partial']} ({', '.join(m['agent'] for m in panel['missing'])} missing)"
        if panel and panel["partial"]
        else ""
    )
    if values.get("stopped"):
        stop = values.get("stop_reason")
        line += f"; stopped early: {values['stopped']}" + (
            f" in round {stop['round']}" if stop and "round" in stop else ""
        )
    return line


def checks_line(values: RunRecord) -> str | None:
    """Return the judge's check of each round under a ``quality`` or ``convergence`` stop rule, in one line."""
    checks = values.get("assessments") or []
    if not checks:
        return None
    said = [
        f"round {c['round']}: "
        + (
            f"{c.get('score')} ({c.get('best')})"
            if c["rule"] == "quality"
            else ("converged" if c.get("converged") else "not converged")
        )
        for c in checks
    ]
    return f"- the judge's check after each round ({checks[0]['rule']}): " + "; ".join(said)
