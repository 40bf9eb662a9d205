"""The positions chart: each agent's confidence over the rounds, coloured by the position it held.

One line per agent, one point per stated position (proposed, then after each
round or turn); a point's colour is its position, so a change of colour is a
change of mind, and agents that agree share a colour. Plain SVG, no plotting
library: the report links it, and a browser shows it as it is.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from debate_engine.nodes.positions import key_of

WIDTH, HEIGHT, LEFT, TOP, PLOT_W, PLOT_H = 640, 360, 48, 24, 400, 280
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""Colours of the positions, most held first; positions past the palette's end share grey."""
OTHER = "#7f7f7f"


def chart_path(report: str | Path) -> Path:
    """Where the chart of ``report.md`` goes: ``report.positions.svg`` beside it."""
    path = Path(report)
    return path.with_name(f"{path.stem}.positions.svg")


def report_files(values: dict[str, Any], report: str, render: Any) -> list[tuple[str, Any]]:
    """Return the report at ``report`` and, when positions were stated, the chart beside it that the report shows."""
    chart = positions_svg(values)
    if chart is None:
        return [(report, render)]
    where = chart_path(report)
    heading = "## Positions\n\n"
    shown = f"{heading}![Positions over rounds]({where.name})\n\n"
    return [(report, lambda: render().replace(heading, shown, 1)), (str(where), lambda: chart)]


def _points(
    values: dict[str, Any],
) -> tuple[dict[str, list[tuple[int, int, str]]], list[tuple[str, str]]]:
    """Per agent ``(step, confidence, position key)``; and the positions, most held first, with a label each."""
    lines: dict[str, list[tuple[int, int, str]]] = {}
    held: dict[str, list[Any]] = {}
    for turn in values.get("transcript", []):
        position = turn.get("position")
        if not position:
            continue
        step = 0 if turn["kind"] == "proposal" else int(turn["round"])
        key = key_of(position)
        lines.setdefault(turn["speaker"], []).append(
            (step, int(position.get("confidence") or 0), key)
        )
        held.setdefault(key, [0, position.get("answer") or position.get("position") or ""])[0] += 1
    ranked = sorted(held.items(), key=lambda item: -item[1][0])
    return lines, [(key, str(label)) for key, (_, label) in ranked]


def positions_svg(values: dict[str, Any]) -> str | None:
    """Return the chart as SVG text, or None when no turn stated a position."""
    lines, positions = _points(values)
    if not lines:
        return None
    colour = {
        key: PALETTE[i] if i < len(PALETTE) else OTHER for i, (key, _) in enumerate(positions)
    }
    last = max(step for points in lines.values() for step, _, _ in points) or 1

    def x(step: int) -> float:
        return LEFT + PLOT_W * step / last

    def y(confidence: int) -> float:
        return TOP + PLOT_H * (100 - confidence) / 100

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
        'font-size="11">',
        f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" '
        'stroke="#ccc"/>',
        f'<text x="4" y="{TOP + 4}">100</text><text x="4" y="{TOP + PLOT_H}">0</text>',
        f'<text x="4" y="{TOP + PLOT_H // 2}" transform="rotate(-90 10 {TOP + PLOT_H // 2})">confidence</text>',
    ]
    for step in range(last + 1):
        label = "proposed" if step == 0 else f"{'turn' if _roundtable(values) else 'round'} {step}"
        parts.append(
            f'<text x="{x(step):.0f}" y="{TOP + PLOT_H + 16}" text-anchor="middle">{label}</text>'
        )
    for agent, points in lines.items():
        path = " ".join(f"{x(s):.1f},{y(c):.1f}" for s, c, _ in points)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="#999"><title>{escape(agent)}</title></polyline>'
        )
        parts += [
            f'<circle cx="{x(s):.1f}" cy="{y(c):.1f}" r="5" fill="{colour[k]}"><title>{escape(agent)}: '
            f"{c}</title></circle>"
            for s, c, k in points
        ]
        s, c, _ = points[-1]
        parts.append(f'<text x="{x(s) + 8:.1f}" y="{y(c) + 4:.1f}">{escape(agent)}</text>')
    for i, (key, label) in enumerate(positions[: len(PALETTE)]):
        top = TOP + 14 + 18 * i
        parts.append(
            f'<circle cx="{LEFT + PLOT_W + 40}" cy="{top - 4}" r="5" fill="{colour[key]}"/>'
            f'<text x="{LEFT + PLOT_W + 50}" y="{top}">{escape(label[:24])}</text>'
        )
    return "\n".join([*parts, "</svg>"]) + "\n"


def _roundtable(values: dict[str, Any]) -> bool:
    return (values.get("settings") or {}).get("protocol") == "roundtable"
