"""The charts: a debate's positions over the rounds and a comparison's accuracy per protocol.

matplotlib draws them, so the layout is the library's: constrained layout sizes the
plot around its tick labels and the legend outside it, so nothing is cut off, and the
only labels are the axes' and the legend's, so none covers another. The SVG keeps its
text as text, carries hover titles, and is the same bytes for the same input (a fixed
hash salt, no date): a report written twice is the same file.
"""

from __future__ import annotations

import io
import textwrap
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate_engine.nodes.positions import key_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Transform
    from matplotlib.typing import RcKeyType

    from debate_engine.app.measure.compare.results import ProtocolFigures
    from debate_engine.app.reports.record import RunRecord

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""Colours of the positions, most held first; positions past the palette's end share grey."""
OTHER = "#7f7f7f"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "p", "h", "<", ">", "*")
"""One shape per agent (repeating past the twelfth): agents at one point stay told apart."""
SPREAD = 7.0
"""Points between the centres of neighbouring agents' markers at one step: a marker and a gap."""
MARKER_AREA = 36.0
"""A marker's area in points squared (6 points across)."""
WRAP, WRAP_LINES = 30, 2
"""A legend label's characters per line and lines, past which it is shortened."""
STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "debate-engine",
    "font.family": "sans-serif",
    "font.size": 9.0,
    "text.parse_math": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
"""Text stays text in the SVG and is never read as mathematics (model text shows a ``$`` as it
is); the fixed salt makes the SVG's ids the same from run to run."""
DRAWING = threading.RLock()
"""matplotlib's settings are global: a server's threads draw one chart at a time, each with STYLE."""
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"


@dataclass
class Chart:
    """A drawn figure and the hover text its SVG carries, keyed by the id of an artist's group."""

    figure: Figure
    titles: dict[str, str] = field(default_factory=dict)
    """A group's own title: what a line or a set of points is."""
    point_titles: dict[str, list[str]] = field(default_factory=dict)
    """One title per point of a scatter's group, in the order of its points."""


def chart_path(report: str | Path) -> Path:
    """Where the chart of ``report.md`` goes: ``report.positions.svg`` beside it."""
    path = Path(report)
    return path.with_name(f"{path.stem}.positions.svg")


def report_files(
    values: RunRecord, report: str, render: Callable[[], str]
) -> list[tuple[str, Callable[[], str]]]:
    """Return the report at ``report`` and, when positions were stated, the chart beside it that the report shows."""
    chart = positions_svg(values)
    if chart is None:
        return [(report, render)]
    where = chart_path(report)
    heading = "## Positions\n\n"
    shown = f"{heading}![Positions over rounds]({where.name})\n\n"
    return [(report, lambda: render().replace(heading, shown, 1)), (str(where), lambda: chart)]


def positions_svg(values: RunRecord) -> str | None:
    """Return the positions chart as SVG text, or None when no turn stated a position."""
    with drawing():
        chart = positions_chart(values)
        return None if chart is None else svg_text(chart)


def accuracy_svg(summaries: list[ProtocolFigures]) -> str:
    """Return a comparison's accuracy per protocol, with its interval, as SVG text."""
    with drawing():
        return svg_text(accuracy_chart(summaries))


@contextmanager
def drawing() -> Iterator[None]:
    """Hold the drawing lock with STYLE in force: build, draw and save charts inside it."""
    import matplotlib  # start-up: matplotlib takes a second to import; only charts need it

    with DRAWING, matplotlib.rc_context(STYLE):
        yield


def _points(
    values: RunRecord,
) -> tuple[dict[str, list[tuple[int, int, str]]], list[tuple[str, str]]]:
    """Per agent ``(step, confidence, position key)``; and the positions, most held first, with a label each."""
    lines: dict[str, list[tuple[int, int, str]]] = {}
    held: dict[str, int] = {}
    labels: dict[str, str] = {}
    for turn in values.get("transcript", []):
        position = turn.get("position")
        if not position:
            continue
        step = 0 if turn["kind"] == "proposal" else int(turn["round"])
        key = key_of(position)
        lines.setdefault(turn["speaker"], []).append(
            (step, int(position.get("confidence") or 0), key)
        )
        held[key] = held.get(key, 0) + 1
        labels.setdefault(key, str(position.get("answer") or position.get("position") or ""))
    ranked = sorted(held.items(), key=lambda item: -item[1])
    return lines, [(key, labels[key]) for key, _ in ranked]


def positions_chart(values: RunRecord) -> Chart | None:
    """Draw each agent's confidence over the steps, its points coloured by position (None: no positions).

    Call inside ``drawing()``, as ``positions_svg`` does, for the chart's fonts and ids.
    """
    from matplotlib.figure import Figure  # start-up: see drawing

    lines, positions = _points(values)
    if not lines:
        return None
    colour = {
        key: PALETTE[i] if i < len(PALETTE) else OTHER for i, (key, _) in enumerate(positions)
    }
    labels = dict(positions)
    chart = Chart(Figure(figsize=(8.0, _legend_height(lines, positions)), layout="constrained"))
    axes = chart.figure.add_subplot()
    step_name = "turn" if _roundtable(values) else "round"
    for i, (agent, points) in enumerate(lines.items()):
        shift = _shift(chart.figure, SPREAD * (i - (len(lines) - 1) / 2))
        steps, confidences = [s for s, _, _ in points], [c for _, c, _ in points]
        axes.plot(
            steps,
            confidences,
            color="#9a9a9a",
            linewidth=1.2,
            zorder=2,
            clip_on=False,
            transform=axes.transData + shift,
            gid=f"agent-{i}-line",
        )
        axes.scatter(
            steps,
            confidences,
            s=MARKER_AREA,
            marker=MARKERS[i % len(MARKERS)],
            c=[colour[k] for _, _, k in points],
            edgecolors="#333333",
            linewidths=0.6,
            zorder=3,
            clip_on=False,
            transform=axes.transData + shift,
            gid=f"agent-{i}-points",
        )
        chart.titles[f"agent-{i}-line"] = chart.titles[f"agent-{i}-points"] = agent
        chart.point_titles[f"agent-{i}-points"] = [
            f"{agent}, {_step_label(s, step_name)}: {c}% for {labels[k]}" for s, c, k in points
        ]
    _position_axes(axes, lines, step_name)
    _positions_legend(chart.figure, list(lines), positions)
    return chart


def _shift(figure: Figure, points: float) -> Transform:
    """Return a sideways shift by ``points`` typographic points, whatever the axes' scale."""
    from matplotlib.transforms import ScaledTranslation  # start-up: see drawing

    return ScaledTranslation(points / 72, 0, figure.dpi_scale_trans)


def _position_axes(
    axes: Axes, lines: dict[str, list[tuple[int, int, str]]], step_name: str
) -> None:
    """Label the axes: confidence from 0 to 100, whole steps with the proposals named."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator  # start-up: see drawing

    steps = [s for points in lines.values() for s, _, _ in points]
    axes.set_xlim(min(steps) - 0.5, max(steps) + 0.5)
    axes.set_ylim(-5, 105)
    axes.set_yticks([0, 25, 50, 75, 100])
    axes.set_ylabel("confidence (%)")
    axes.set_xlabel(step_name)
    axes.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda s, _: _step_label(int(s), "")))
    axes.grid(axis="y", color="#e6e6e6", linewidth=0.8)
    axes.set_axisbelow(True)


def _step_label(step: int, step_name: str) -> str:
    """``proposed`` for step 0, else ``round 2`` (or only ``2`` on an axis already named)."""
    if step == 0:
        return "proposed"
    return f"{step_name} {step}".strip()


def _positions_legend(figure: Figure, agents: list[str], positions: list[tuple[str, str]]) -> None:
    """Name the agents by marker and the positions by colour, in one legend right of the plot."""
    from matplotlib.lines import Line2D  # start-up: see drawing

    def header(text: str) -> Line2D:
        return Line2D([], [], linestyle="none", label=text)

    def marker(shape: str, colour: str, text: str, line: bool) -> Line2D:
        return Line2D(
            [],
            [],
            marker=shape,
            markersize=6,
            markerfacecolor=colour,
            markeredgecolor="#333333",
            markeredgewidth=0.6,
            color="#9a9a9a",
            linestyle="-" if line else "none",
            label=text,
        )

    handles = [header("Agents")] + [
        marker(MARKERS[i % len(MARKERS)], "white", _wrap(agent), True)
        for i, agent in enumerate(agents)
    ]
    handles.append(header("Positions"))
    handles += [
        marker("o", PALETTE[i], _wrap(label), False)
        for i, (_, label) in enumerate(positions[: len(PALETTE)])
    ]
    if len(positions) > len(PALETTE):
        others = len(positions) - len(PALETTE)
        handles.append(marker("o", OTHER, f"{others} other position{'s' * (others > 1)}", False))
    legend = figure.legend(handles=handles, loc="outside right upper", frameon=False)
    for heading in (0, len(agents) + 1):
        legend.get_texts()[heading].set_fontweight("bold")


def _wrap(text: str) -> str:
    """Return ``text`` on at most two short lines, shortened with an ellipsis past them."""
    lines = textwrap.wrap(
        " ".join(text.split()) or "-", WRAP, max_lines=WRAP_LINES, placeholder=" …"
    )
    return "\n".join(lines)


def _legend_height(
    lines: dict[str, list[tuple[int, int, str]]], positions: list[tuple[str, str]]
) -> float:
    """Return the figure's height in inches: enough for the plot and for every row of the legend."""
    labels = [*lines, *(label for _, label in positions[: len(PALETTE)])]
    rows = 2 + (len(positions) > len(PALETTE))  # the two headings and the others' row
    text_lines = sum(_wrap(label).count("\n") + 1 for label in labels) + rows
    return max(3.6, 0.6 + 0.18 * text_lines + 0.08 * (len(labels) + rows))


def accuracy_chart(summaries: list[ProtocolFigures]) -> Chart:
    """Draw each protocol's accuracy with its interval, one row per protocol, the figures beside it.

    Call inside ``drawing()``, as ``accuracy_svg`` does, for the chart's fonts and ids.
    """
    from matplotlib.figure import Figure  # start-up: see drawing

    chart = Chart(Figure(figsize=(8.0, 1.2 + 0.42 * max(1, len(summaries))), layout="constrained"))
    axes = chart.figure.add_subplot()
    rows = [len(summaries) - 1 - index for index in range(len(summaries))]  # the first on top
    for index, summary in enumerate(summaries):
        if summary["runs"]:
            bars = axes.errorbar(
                [summary["accuracy"]],
                [rows[index]],
                xerr=_reach(summary),
                fmt="o",
                color=PALETTE[0],
                elinewidth=2,
                capsize=4,
                markersize=6,
            )
            bars[0].set_gid(f"protocol-{index}")
            chart.titles[f"protocol-{index}"] = f"{summary['label']}: {_figures(summary)}"
    axes.set_xlim(-0.02, 1.02)  # an interval's cap at 0 or 1 is drawn whole
    axes.set_ylim(-0.6, len(summaries) - 0.4)
    axes.set_xlabel("accuracy (95% interval)")
    axes.set_yticks(rows, [_wrap(s["label"]) for s in summaries])
    figures = axes.secondary_yaxis("right")
    figures.set_ticks(rows, labels=[_figures(s) for s in summaries])
    figures.tick_params(length=0)
    figures.spines["right"].set_visible(False)
    axes.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    axes.set_axisbelow(True)
    return chart


def _reach(summary: ProtocolFigures) -> list[list[float]]:
    """Return how far the interval reaches below and above the accuracy, never less than nothing."""
    low, high = summary["interval"]
    return [[max(0.0, summary["accuracy"] - low)], [max(0.0, high - summary["accuracy"])]]


def _figures(summary: ProtocolFigures) -> str:
    """``0.650 (0.433-0.819), 13/20, 1,234 tokens/task``: what a protocol's row says beside it."""
    low, high = summary["interval"]
    if not summary["runs"]:
        return "no runs scored"
    return (
        f"{summary['accuracy']:.3f} ({low:.3f}-{high:.3f}), {summary['correct']}/{summary['runs']}, "
        f"{summary['tokens_per_task']:,.0f} tokens/task"
    )


def svg_text(chart: Chart) -> str:
    """Return the chart as a standalone ``<svg>`` element: no XML prolog, so it embeds in HTML.

    Each titled group gains a ``<title>``, and each point of a scatter its own: a browser shows
    them on hover.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # start-up: see drawing

    FigureCanvasAgg(chart.figure)
    buffer = io.StringIO()
    chart.figure.savefig(buffer, format="svg", metadata=NO_METADATA)
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    root = ET.fromstring(buffer.getvalue())
    for group in root.iter(f"{{{SVG_NS}}}g"):
        gid = group.get("id", "")
        if gid in chart.titles:
            _title(group, chart.titles[gid], first=True)
        for point, title in zip(_marks(group), chart.point_titles.get(gid, []), strict=False):
            _title(point, title)
    return ET.tostring(root, encoding="unicode") + "\n"


def _marks(group: ET.Element) -> list[ET.Element]:
    """Return the points a scatter's group draws, in order: ``<use>`` of one shape, or paths."""
    uses = list(group.iter(f"{{{SVG_NS}}}use"))
    return uses or [p for p in group.iter(f"{{{SVG_NS}}}path") if p.get("id") is None]


def _title(element: ET.Element, text: str, first: bool = False) -> None:
    title = ET.Element(f"{{{SVG_NS}}}title")
    title.text = text
    if first:
        element.insert(0, title)
    else:
        element.append(title)


def _roundtable(values: RunRecord) -> bool:
    settings = values.get("settings")
    return bool(settings and settings.get("protocol") == "roundtable")
