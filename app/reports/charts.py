"""The charts as files and pages take them: a debate's stance chart and a comparison's accuracy per protocol.

How charts are drawn (one lock, one style, SVG with hover titles) is ``drawing``'s; the stance
chart itself is ``stance_chart``'s. The only labels are the axes' and the legend's, so none covers
another.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from debate_engine.app.reports.drawing import PALETTE, Chart, drawing, svg_text, wrap
from debate_engine.app.reports.stance_chart import positions_chart

if TYPE_CHECKING:
    from debate_engine.app.measure.compare.results import ProtocolFigures
    from debate_engine.app.reports.record import RunRecord

__all__ = ["Chart", "accuracy_chart", "accuracy_svg", "drawing", "positions_chart", "positions_svg"]


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
    """Return the stance chart as SVG text, or None when no turn stated a position."""
    with drawing():
        chart = positions_chart(values)
        return None if chart is None else svg_text(chart)


def accuracy_svg(summaries: list[ProtocolFigures]) -> str:
    """Return a comparison's accuracy per protocol, with its interval, as SVG text."""
    with drawing():
        return svg_text(accuracy_chart(summaries))


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
    axes.set_yticks(rows, [wrap(s["label"]) for s in summaries])
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
