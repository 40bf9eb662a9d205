"""The charts: valid SVG naming every agent, stance and protocol; a bar per stance held at each step;
and, measured by matplotlib's own renderer, no text over another and nothing outside the figure."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from debate_engine.app.reports import charts

SVG = "{http://www.w3.org/2000/svg}"
LONG = "Shard the cache by tenant and {} with a write-behind queue, a circuit breaker and retries"


def debate(agents: dict[str, list[tuple[int, str]]], protocol: str = "phases") -> dict[str, Any]:
    """Return a debate's values: each agent's ``(confidence, answer)`` proposed, then per round.

    The turns are in the order a debate makes them: every agent's proposal, then round by round
    (a roundtable's agents take turns, one turn each).
    """
    transcript: list[dict[str, Any]] = []
    steps = max(len(stated) for stated in agents.values())
    for step in range(steps):
        for agent, stated in agents.items():
            if step >= len(stated):
                continue
            confidence, answer = stated[step]
            kind = "proposal" if step == 0 and protocol == "phases" else "refinement"
            number = len(transcript) // 2 + 1 if protocol == "roundtable" else max(step, 1)
            position = {"position": answer, "confidence": confidence, "answer": answer}
            transcript.append(
                {"kind": kind, "round": number, "speaker": agent, "position": position}
            )
            transcript.append({"kind": "critique", "round": number, "speaker": agent})
    return {"settings": {"protocol": protocol}, "transcript": transcript}


def summary(label: str, accuracy: float, runs: int = 20) -> dict[str, Any]:
    """Return one protocol's figures, shaped as ``results.summarise`` makes them."""
    return {
        "label": label,
        "runs": runs,
        "correct": round(accuracy * runs),
        "accuracy": accuracy,
        "interval": [max(0.0, accuracy - 0.2), min(1.0, accuracy + 0.15)],
        "tokens_per_task": 1234.5,
    }


@contextmanager
def drawn(chart: charts.Chart | None) -> Iterator[tuple[charts.Chart, list[tuple[str, Bbox]]]]:
    """Draw ``chart`` with the Agg renderer; yield it and every text drawn, with its extent in pixels."""
    assert chart is not None
    texts: list[Text] = []
    draw = Text.draw

    def recording(self: Text, renderer: Any) -> None:
        if self.get_visible() and self.get_text().strip():
            texts.append(self)
        draw(self, renderer)

    FigureCanvasAgg(chart.figure)
    with pytest.MonkeyPatch.context() as patch, charts.drawing():
        patch.setattr(Text, "draw", recording)
        chart.figure.canvas.draw()
    renderer = chart.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    yield chart, [(t.get_text(), t.get_window_extent(renderer)) for t in texts]


def assert_readable(chart: charts.Chart | None) -> list[str]:
    """Assert no drawn text overlaps another and all lie inside the figure; return the texts."""
    with drawn(chart) as (shown, texts):
        page = shown.figure.bbox
        for text, box in texts:
            assert page.x0 - 0.5 <= box.x0 and box.x1 <= page.x1 + 0.5, f"{text!r} is cut off"
            assert page.y0 - 0.5 <= box.y0 and box.y1 <= page.y1 + 0.5, f"{text!r} is cut off"
        for i, (a, one) in enumerate(texts):
            for b, other in texts[i + 1 :]:
                width = min(one.x1, other.x1) - max(one.x0, other.x0)
                height = min(one.y1, other.y1) - max(one.y0, other.y0)
                assert width <= 0.5 or height <= 0.5, f"{a!r} overlaps {b!r}"
    return [text for text, _ in texts]


def chart_of(values: dict[str, Any]) -> charts.Chart | None:
    with charts.drawing():
        return charts.positions_chart(values)


def words(svg: str) -> list[str]:
    """Return every text of the SVG: its ``<text>`` lines and its hover ``<title>``s."""
    root = ET.fromstring(svg)
    return [e.text or "" for e in root.iter() if e.tag in (f"{SVG}text", f"{SVG}title")]


def marks(svg: str, gid: str) -> list[ET.Element]:
    """Return the points drawn in the group ``gid``: uses of one marker shape, or paths."""
    group = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("id") == gid)
    uses = list(group.iter(f"{SVG}use"))
    return uses or [p for p in group.iter(f"{SVG}path") if p.get("id") is None]


THREE = {
    "architect": [(60, "42"), (80, "42"), (90, "41")],
    "kiss": [(70, "41"), (70, "41"), (100, "41")],
    "security": [(50, "yes"), (100, "42"), (100, "42")],
}


def test_the_positions_chart_is_svg_naming_every_agent_and_stance() -> None:
    svg = charts.positions_svg(debate(THREE))
    assert svg is not None and svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    shown = words(svg)
    assert {"Stances, by answer", "architect", "kiss", "security", "42", "41", "yes"} <= set(shown)
    assert "round 1: 2 of 3 (architect, security) hold 42" in shown  # each bar says what it is
    assert "kiss, proposed to round 2: 41" in shown  # and each agent's run of one stance
    assert svg == charts.positions_svg(debate(THREE))  # the same input, the same bytes
    assert "<text" in svg and "DejaVuSans" not in svg  # text stays text, no glyph outlines


def bars(chart: charts.Chart) -> dict[float, list[float]]:
    """Return each column's bar heights, by the column's place, in the upper panel."""
    found: dict[float, list[float]] = {}
    for bar in chart.figure.axes[0].patches:
        found.setdefault(round(bar.get_x() + bar.get_width() / 2, 6), []).append(bar.get_height())
    return found


def test_the_positions_chart_stacks_the_share_of_agents_per_stance_at_each_step() -> None:
    svg = charts.positions_svg(debate(THREE))
    assert svg is not None
    ids = [g.get("id") or "" for g in ET.fromstring(svg).iter(f"{SVG}g")]
    at = [[i for i in ids if re.fullmatch(rf"stance-\d+-at-{x}", i)] for x in range(3)]
    assert [len(column) for column in at] == [3, 2, 2]  # proposed: 41, 42, yes; then 41 and 42
    chart = chart_of(debate(THREE))
    assert chart is not None
    heights = bars(chart)
    assert [sorted(round(h) for h in heights[x]) for x in sorted(heights)] == [
        [33, 33, 33],
        [33, 67],
        [33, 67],
    ]
    runs = [i for i in ids if re.fullmatch(r"agent-\d+-run-\d+", i)]
    assert len(runs) == 5  # architect 42 then 41, kiss 41, security yes then 42


def test_no_positions_no_chart() -> None:
    assert charts.positions_svg({"transcript": [{"kind": "critique", "speaker": "a"}]}) is None


def test_two_agents_who_disagree_split_each_step_half_and_half_and_no_label_overlaps() -> None:
    values = debate({"kiss": [(100, "yes"), (100, "yes")], "security": [(100, "no"), (100, "no")]})
    chart = chart_of(values)
    texts = assert_readable(chart)
    assert {"kiss", "security", "yes", "no"} <= set(texts)
    assert chart is not None
    assert [sorted(h) for h in bars(chart).values()] == [[50.0, 50.0], [50.0, 50.0]]


def test_eight_agents_with_long_alike_positions_hold_one_stance_shortened_and_readable() -> None:
    agents = {
        f"agent-with-a-long-name-{i}": [(100, LONG.format(i)), (90 - i, LONG.format(i + 1))]
        for i in range(8)
    }
    texts = assert_readable(chart_of(debate(agents)))
    assert all(name in texts for name in agents)
    named = [t for t in texts if t.startswith("Shard the cache")]
    assert len(named) == 1 and named[0].endswith("…")  # one stance, its name shortened


def test_nine_different_answers_show_six_stances_and_one_other() -> None:
    agents = {f"agent {i}": [(100, f"answer {i}"), (90, f"answer {i}")] for i in range(9)}
    chart = chart_of(debate(agents))
    texts = assert_readable(chart)
    assert chart is not None
    legend = [t.get_text() for t in chart.figure.legends[0].get_texts()]
    assert legend == [*(f"answer {i}" for i in range(6)), "other (3 stances)"]
    assert "other (3 stances)" in texts


def test_a_long_roundtable_labels_its_turns_without_overlap() -> None:
    agents = {
        name: [(50 + (i * 7 + t) % 50, f"answer {t % 3}") for t in range(40)]
        for i, name in enumerate("abc")
    }
    texts = assert_readable(chart_of(debate(agents, protocol="roundtable")))
    assert "turn" in texts and "proposed" not in texts


def test_model_text_is_shown_as_text_never_run_or_read_as_math() -> None:
    hostile = '$5 <script>alert(1)</script> <img src=x onerror="alert(2)"> $6'
    svg = charts.positions_svg(debate({"<b>bold</b>": [(40, hostile)]}))
    assert svg is not None
    root = ET.fromstring(svg)
    assert not [e for e in root.iter() if e.tag.split("}")[-1] in ("script", "img", "b")]
    assert "<b>bold</b>" in words(svg) and "&lt;script&gt;" in svg
    assert any("$5 <script>" in w for w in words(svg))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 100), st.sampled_from(["7", "yes", LONG.format("x"), "no idea"])
            ),
            min_size=1,
            max_size=5,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_no_text_overlaps_for_any_positions(stated: list[list[tuple[int, str]]]) -> None:
    agents = {f"agent {i}": points for i, points in enumerate(stated)}
    texts = assert_readable(chart_of(debate(agents)))
    assert all(name in texts for name in agents)


def accuracy_of(summaries: list[dict[str, Any]]) -> charts.Chart:
    with charts.drawing():
        return charts.accuracy_chart(summaries)


def test_the_accuracy_chart_draws_each_protocols_interval_and_names_it() -> None:
    summaries = [summary("single", 0.55), summary("vote", 0.65), summary("debate", 1.0)]
    svg = charts.accuracy_svg(summaries)
    assert svg.startswith("<svg") and svg == charts.accuracy_svg(summaries)
    shown = words(svg)
    assert {"single", "vote", "debate", "accuracy (95% interval)"} <= set(shown)
    assert "1.000 (0.800-1.000), 20/20, 1,234 tokens/task" in shown
    groups = [g.get("id") for g in ET.fromstring(svg).iter(f"{SVG}g")]
    assert [g for g in groups if g and g.startswith("protocol-")] == [
        f"protocol-{i}" for i in range(3)
    ]
    assert_readable(accuracy_of(summaries))


def test_the_accuracy_chart_fits_many_long_protocols_and_ones_with_no_runs() -> None:
    summaries = [
        summary(f"debate-vote with {i} agents and a long label $5", i / 10) for i in range(10)
    ]
    summaries.append(summary("roundtable", 0.0, runs=0))
    texts = assert_readable(accuracy_of(summaries))
    assert "no runs scored" in texts
    assert "protocol-10" not in charts.accuracy_svg(summaries)  # nothing scored, nothing drawn


def test_the_command_line_and_the_charts_module_start_without_matplotlib() -> None:
    code = (
        "import sys\nfrom debate_engine.app.cli import main\nimport debate_engine.app.reports.charts\n"
        "print('matplotlib' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr


def test_charts_drawn_by_several_threads_at_once_are_each_as_drawn_alone() -> None:
    alone = charts.positions_svg(debate(THREE)), charts.accuracy_svg([summary("vote", 0.5)])
    with ThreadPoolExecutor(4) as pool:
        drawn = list(
            pool.map(
                lambda i: (
                    charts.positions_svg(debate(THREE))
                    if i % 2
                    else charts.accuracy_svg([summary("vote", 0.5)])
                ),
                range(6),
            )
        )
    assert drawn == [alone[0] if i % 2 else alone[1] for i in range(6)]
