"""How every chart is drawn: matplotlib under one lock and one style, saved as SVG with hover titles.

matplotlib draws them, so the layout is the library's: constrained layout sizes the
plot around its tick labels and the legend outside it, so nothing is cut off. The SVG keeps its
text as text, carries hover titles, and is the same bytes for the same input (a fixed
hash salt, no date): a report written twice is the same file.
"""

from __future__ import annotations

import io
import textwrap
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""Colours of the stances, most held first (and of a comparison's points)."""
OTHER = "#9a9a9a"
"""The colour of every stance past the shown ones."""
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
    """A group's own title: what a bar or a point is."""


@contextmanager
def drawing() -> Iterator[None]:
    """Hold the drawing lock with STYLE in force: build, draw and save charts inside it."""
    import matplotlib  # start-up: matplotlib takes a second to import; only charts need it

    with DRAWING, matplotlib.rc_context(STYLE):
        yield


def wrap(text: str) -> str:
    """Return ``text`` on at most two short lines, shortened with an ellipsis past them."""
    lines = textwrap.wrap(
        " ".join(text.split()) or "-", WRAP, max_lines=WRAP_LINES, placeholder=" …"
    )
    return "\n".join(lines)


def svg_text(chart: Chart) -> str:
    """Return the chart as a standalone ``<svg>`` element: no XML prolog, so it embeds in HTML.

    Each titled group gains a ``<title>``: a browser shows it on hover.
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
            title = ET.Element(f"{{{SVG_NS}}}title")
            title.text = chart.titles[gid]
            group.insert(0, title)
    return ET.tostring(root, encoding="unicode") + "\n"
