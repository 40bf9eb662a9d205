"""The stance chart: how many agents hold each stance after every round, and who agrees with whom.

Positions are grouped into stances first (``stances``), so the chart has a legend entry per
stance, at most ``SHOWN`` and an ``other``, however many sentences the agents wrote. The upper
panel stacks the share of agents holding each stance at each step (the proposals, each round, or
each turn of a roundtable); the lower one is a row per agent, coloured by the stance it holds at
each step, so agents who agree share a colour in a column. A long roundtable's turns are put
into at most ``MAX_COLUMNS`` columns (each column's share the mean of its turns'), so the chart
stays one width and one size however long the debate.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from debate_engine.app.reports.drawing import OTHER, PALETTE, Chart, wrap
from debate_engine.app.reports.stances import (
    SHOWN,
    Stances,
    Step,
    group,
    shorten,
    stated_positions,
    steps,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from debate_engine.app.reports.record import RunRecord

MAX_COLUMNS = 100
"""Columns at most: past it, consecutive steps share a column."""
MAX_TICKS = 7
"""Labelled steps at most on the axis."""
SHARE_HEIGHT = 2.4
"""The upper panel's height in inches."""
ROW_HEIGHT = 0.22
"""An agent's row in the lower panel, in inches."""
AGENT_CHARS = 24
"""An agent's name on the axis is shortened past this (the whole name is in the hover titles)."""


@dataclass(frozen=True)
class Column:
    """One column of the chart: a step, or consecutive steps of a long roundtable."""

    label: str
    """``round 2``, or ``turn 11 to turn 20``."""
    tick: str
    """The last step's label on an axis named by the unit: ``2``, ``20``."""
    shares: list[float]
    """Per shown stance, the share of agents holding it (the mean over the column's steps)."""
    held: dict[str, int]
    """Every agent that has stated a position by the column's end, and its shown stance's index."""
    single: bool
    """True when the column is one step: its shares are counts of agents, said as such."""
    x: float
    """Where the column stands: its place among the steps, or its turns' middle in a roundtable."""
    width: float
    """How many places (or turns) it spans."""


def stance_colour(index: int) -> str:
    """Return a shown stance's colour: the palette's, ``other`` in grey."""
    return PALETTE[index] if index < SHOWN else OTHER


def columns(found: list[Step], stances: Stances, by_turn: bool) -> list[Column]:
    """Return the chart's columns: one per step, or ``MAX_COLUMNS`` of consecutive steps at most.

    ``by_turn`` places a roundtable's columns at their turns' numbers; a phase debate's stand one
    place apart (the proposals, then each round).
    """
    width = math.ceil(len(found) / MAX_COLUMNS) or 1
    shown = len(stances.labels())
    out = []
    for start in range(0, len(found), width):
        part = found[start : start + width]
        shares = [0.0] * shown
        for step in part:
            for index in step.held.values():
                shares[stances.shown(index)] += 1 / len(step.held) / len(part)
        last = part[-1]
        label = last.label if len(part) == 1 else f"{part[0].label} to {last.label}"
        held = {agent: stances.shown(index) for agent, index in last.held.items()}
        if by_turn:
            x, span = (part[0].round + last.round) / 2, last.round - part[0].round + 1
        else:
            x, span = start / width, 1
        out.append(Column(label, last.tick, shares, held, len(part) == 1, x, span))
    return out


def positions_chart(values: RunRecord) -> Chart | None:
    """Draw the stances held over the steps and each agent's stance (None: no turn stated a position).

    Call inside ``drawing()``, as ``charts.positions_svg`` does, for the chart's fonts and ids.
    """
    from matplotlib.figure import Figure  # start-up: see drawing.drawing

    transcript = values.get("transcript", [])
    stated = stated_positions(transcript)
    if not stated:
        return None
    stances = group(stated)
    settings = values.get("settings")
    roundtable = bool(settings and settings.get("protocol") == "roundtable")
    unit = "turn" if roundtable else "round"
    shown = columns(steps(transcript, stances, unit), stances, roundtable)
    agents = list(dict.fromkeys(t["speaker"] for t in transcript if t.get("position")))
    labels = stances.labels()
    figure = Figure(
        figsize=(8.0, _height(agents, labels)),
        layout="constrained",
    )
    share, rows = figure.subplots(
        2, 1, sharex=True, height_ratios=[SHARE_HEIGHT, max(0.5, ROW_HEIGHT * len(agents))]
    )
    chart = Chart(figure)
    _shares(chart, share, shown, labels)
    _rows(chart, rows, shown, agents, labels)
    _axes(share, rows, shown, agents, unit)
    _legend(chart, labels, stances)
    return chart


def _shares(chart: Chart, axes: Axes, shown: list[Column], labels: list[str]) -> None:
    """Stack each column's shares, most held stance at the bottom; each bar says what it is on hover."""
    gap = 0.8 if len(shown) <= 30 else 1.0
    below = [0.0] * len(shown)
    for index, label in enumerate(labels):
        for x, column in enumerate(shown):
            share = column.shares[index]
            if share <= 0:
                continue
            bar = axes.bar(
                column.x,
                100 * share,
                bottom=100 * below[x],
                width=gap * column.width,
                color=stance_colour(index),
                linewidth=0,
            )[0]
            gid = f"stance-{index}-at-{x}"
            bar.set_gid(gid)
            chart.titles[gid] = f"{column.label}: {_held(column, index, share)} {label}"
            below[x] += share


def _held(column: Column, index: int, share: float) -> str:
    """``2 of 3 (kiss, security) hold``, or ``67% of agents on average hold`` for a column of several steps."""
    if column.single:
        agents = [agent for agent, held in column.held.items() if held == index]
        return f"{len(agents)} of {len(column.held)} ({', '.join(agents)}) hold"
    return f"{100 * share:.0f}% of agents on average hold"


def _rows(
    chart: Chart, axes: Axes, shown: list[Column], agents: list[str], labels: list[str]
) -> None:
    """Draw a row per agent, a run of columns per stance it held: who agrees with whom, by colour."""
    for row, agent in enumerate(agents):
        runs: list[tuple[int, int, int]] = []  # first column, last column, stance
        for x, column in enumerate(shown):
            held = column.held.get(agent)
            if held is None:
                continue
            if runs and runs[-1][2] == held and runs[-1][1] == x - 1:
                runs[-1] = (runs[-1][0], x, held)
            else:
                runs.append((x, x, held))
        for n, (first, last, held) in enumerate(runs):
            left = shown[first].x - shown[first].width / 2
            bar = axes.barh(
                row,
                shown[last].x + shown[last].width / 2 - left,
                left=left,
                height=0.8,
                color=stance_colour(held),
                linewidth=0,
            )[0]
            gid = f"agent-{row}-run-{n}"
            bar.set_gid(gid)
            span = (
                shown[first].label
                if first == last
                else f"{shown[first].label} to {shown[last].label}"
            )
            chart.titles[gid] = f"{agent}, {span}: {labels[held]}"


def _axes(share: Axes, rows: Axes, shown: list[Column], agents: list[str], unit: str) -> None:
    """Label the panels: shares from 0 to 100 %, an agent per row, at most ``MAX_TICKS`` steps named.

    A roundtable's axis is its turns' numbers (``1,000``), ticked where matplotlib finds round ones; a phase
    debate's names its steps (``proposed``, ``1``, ``2``), every one or every 2nd, 5th, 10th...
    """
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter  # start-up: see drawing.drawing

    share.set_ylim(0, 100)
    share.set_yticks([0, 50, 100])
    share.set_ylabel("agents holding (%)")
    share.tick_params(axis="x", length=0)
    rows.set_xlim(shown[0].x - shown[0].width / 2, shown[-1].x + shown[-1].width / 2)
    rows.set_ylim(len(agents) - 0.5, -0.5)
    rows.set_yticks(range(len(agents)), [shorten(agent, AGENT_CHARS) for agent in agents])
    rows.tick_params(axis="y", length=0)
    rows.spines["left"].set_visible(False)
    if unit == "turn":
        rows.xaxis.set_major_locator(MaxNLocator(nbins=MAX_TICKS, integer=True, min_n_ticks=1))
        rows.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    else:
        ticks = _ticks(len(shown))
        rows.set_xticks([shown[i].x for i in ticks], [shown[i].tick for i in ticks])
    rows.set_xlabel(unit)


def _ticks(count: int) -> list[int]:
    """Return the columns to label: every one when few, else every 2nd, 5th, 10th, 20th... from the first."""
    every = next(n for n in _steps() if math.ceil(count / n) <= MAX_TICKS)
    return list(range(0, count, every))


def _steps() -> Iterator[int]:
    """1, 2, 5, 10, 20, 50, 100, ..."""
    scale = 1
    while True:
        yield from (scale, 2 * scale, 5 * scale)
        scale *= 10


def _legend(chart: Chart, labels: list[str], stances: Stances) -> None:
    """Name the stances by colour right of the plot, titled by how they were grouped."""
    from matplotlib.patches import Patch  # start-up: see drawing.drawing

    handles = [Patch(color=stance_colour(i), label=wrap(label)) for i, label in enumerate(labels)]
    legend = chart.figure.legend(
        handles=handles,
        loc="outside right upper",
        frameon=False,
        title=f"Stances, by {stances.rule}",
    )
    legend.get_title().set_fontweight("bold")
    for i, (text, label) in enumerate(zip(legend.get_texts(), labels, strict=True)):
        gid = f"stance-{i}"
        text.set_gid(gid)
        chart.titles[gid] = stances.stances[i].full if i < SHOWN else label


def _height(agents: list[str], labels: list[str]) -> float:
    """Return the figure's height in inches: the two panels, or the legend when it is taller."""
    panels = 0.9 + SHARE_HEIGHT + max(0.5, ROW_HEIGHT * len(agents))
    text_lines = sum(wrap(label).count("\n") + 1 for label in labels) + 1
    return max(panels, 0.6 + 0.18 * text_lines + 0.08 * len(labels))
