"""Stances: free-text positions grouped into a few, by answer or by alike words; charted and tabled by stance.

The grouping is a pure function of the multiset of positions (property-tested); the chart's legend
stays at most six stances and an ``other`` however many positions, its width and columns stay
bounded on a long roundtable, and its steps are named once each.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from debate_engine.app.reports import charts, stance_chart
from debate_engine.app.reports.markdown import render_report
from debate_engine.app.reports.stances import (
    SHOWN,
    group,
    member_key,
    stance_lines,
    stated_positions,
    steps,
)
from debate_engine.app.viewer.debate_view import positions as positions_view

SVG = "{http://www.w3.org/2000/svg}"
PARAPHRASES = [
    "Use Redis as a write-through cache with a 5 minute TTL",
    "Redis write-through cache, TTL of 10 minutes",
    "Use Redis as a write-through cache with a 30 minute TTL.",
]
SHARDING = [
    "Shard the cache by tenant id across 4 nodes",
    "Shard the cache by tenant id across 8 nodes",
]


def position(text: str, answer: str = "", confidence: int = 70) -> dict[str, Any]:
    return {"position": text, "reason": "because", "confidence": confidence, "answer": answer}


def names(positions: list[dict[str, Any]]) -> list[list[str]]:
    """Return the texts of each stance's positions, most held stance first."""
    grouped = group(positions)
    found: list[list[str]] = [[] for _ in grouped.stances]
    for p in positions:
        found[grouped.of(p)].append(p["position"] or p["answer"])
    return found


def roundtable(stated: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Return a roundtable's values: one turn per ``(speaker, position)``, numbered from 1."""
    transcript = [
        {"kind": "message", "round": n, "seq": n, "speaker": agent, "position": p}
        for n, (agent, p) in enumerate(stated, start=1)
    ]
    return {"settings": {"protocol": "roundtable"}, "transcript": transcript}


def phases(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Return a phase debate's values: the proposals (``rounds[0]``), then each round's refinements."""
    transcript = []
    for step, stated in enumerate(rounds):
        for agent, p in stated.items():
            kind = "proposal" if step == 0 else "refinement"
            seq = len(transcript)
            transcript.append(
                {
                    "kind": kind,
                    "round": max(step, 1),
                    "seq": seq,
                    "speaker": agent,
                    "position": p,
                    "content": p["position"],
                    "tokens": 3,
                }
            )
    return {"settings": {"protocol": "phases"}, "transcript": transcript}


def test_short_answers_group_as_the_verdict_counts_them() -> None:
    stated = [
        position("The sum is 42", "42"),
        position("Forty-two, by column addition", "42.0"),
        position("I make it 4.2e1", "4.2e1"),
        position("It is 41", "41"),
    ]
    grouped = group(stated)
    assert [(s.name, s.positions) for s in grouped.stances] == [("42", 3), ("41", 1)]
    assert grouped.rule == "answer" and grouped.of(stated[0]) == grouped.of(stated[2]) == 0
    assert len({member_key(p) for p in stated}) == 2  # the engine's agreement key, unchanged


def test_a_stance_is_named_by_its_most_stated_member() -> None:
    stated = [
        position("x", "Yes"),
        position("y", "yes"),
        position("z", "yes."),
        position("v", "yes"),
        position("w", "no"),
    ]
    grouped = group(stated)
    assert [(s.name, s.positions) for s in grouped.stances] == [("yes", 4), ("no", 1)]


def test_open_positions_group_by_alike_words() -> None:
    stated = [position(t) for t in [*PARAPHRASES, *SHARDING, "Keep no cache at all"]]
    assert names(stated) == [PARAPHRASES, SHARDING, ["Keep no cache at all"]]
    grouped = group(stated)
    assert grouped.rule == "alike words"
    assert grouped.stances[0].name == "Redis write-through cache, TTL of 10 minutes"


def test_a_position_that_says_not_is_never_alike_one_that_does_not() -> None:
    stated = [
        position("Cache the sessions in Redis with a short TTL"),
        position("Don't cache the sessions in Redis with a short TTL"),
        position("Do not cache sessions in Redis, short TTL or not"),
    ]
    assert len(group(stated).stances) == 2
    assert group(stated).of(stated[1]) == group(stated).of(stated[2])


def test_a_long_answer_is_read_as_words_not_matched_exactly() -> None:
    long_one = "Shard the cache by tenant id across four nodes behind a consistent-hash ring"
    stated = [position("", long_one), position("", long_one.replace("four", "eight"))]
    grouped = group(stated)
    assert len(grouped.stances) == 1 and grouped.stances[0].rule == "words"
    mixed = group([*stated, position("p", "42")])
    assert mixed.rule == "answer or alike words"


def test_a_thousand_different_positions_show_six_stances_and_an_other() -> None:
    stated = [position(f"Option {n}", f"choice {n}") for n in range(1000)]
    grouped = group(stated)
    assert len(grouped.labels()) == SHOWN + 1 == 7
    assert grouped.labels()[-1] == "other (994 stances)"
    assert {grouped.shown(grouped.of(p)) for p in stated} == set(range(7))


TEXTS = st.sampled_from(
    [
        *PARAPHRASES,
        *SHARDING,
        "Keep no cache at all",
        "Do not cache the sessions",
        "",
        "  cache   SESSIONS ",
        "Shard the cache",
    ]
)
ANSWERS = st.sampled_from(["", "", "42", "42.0", "41", "yes", "Yes.", "x" * 41])
POSITIONS = st.lists(
    st.builds(position, TEXTS, ANSWERS, st.integers(0, 100)), min_size=0, max_size=30
)


@settings(max_examples=200, deadline=None)
@given(POSITIONS)
def test_every_position_is_in_exactly_one_stance(stated: list[dict[str, Any]]) -> None:
    grouped = group(stated)
    assert sum(s.positions for s in grouped.stances) == len(stated)
    assert set(grouped.members) == {member_key(p) for p in stated}
    assert sorted({grouped.of(p) for p in stated}) == list(range(len(grouped.stances)))
    assert len({s.key for s in grouped.stances}) == len(grouped.stances)


@settings(max_examples=200, deadline=None)
@given(POSITIONS, st.randoms(use_true_random=False))
def test_the_same_positions_in_any_order_give_the_same_stances(
    stated: list[dict[str, Any]], shuffle: Any
) -> None:
    grouped = group(stated)
    assert group(stated) == grouped  # the same input, the same grouping
    other = list(stated)
    shuffle.shuffle(other)
    again = group(other)
    assert again.stances == grouped.stances
    assert [again.stances[again.of(p)] for p in stated] == [
        grouped.stances[grouped.of(p)] for p in stated
    ]


def test_each_step_holds_every_agents_stance_at_its_end() -> None:
    values = phases(
        [
            {"a": position("p", "42"), "b": position("p", "41"), "c": position("p", "yes")},
            {"a": position("p", "42"), "b": position("p", "41"), "c": position("p", "42")},
            {"b": position("p", "42")},
        ]
    )
    grouped = group(stated_positions(values["transcript"]))
    found = steps(values["transcript"], grouped, "round")
    assert [s.label for s in found] == ["proposed", "round 1", "round 2"]
    forty_two = grouped.of(position("", "42"))
    assert found[1].agreeing(grouped)[0] == (forty_two, ["a", "c"])
    assert found[2].agreeing(grouped) == [(forty_two, ["a", "b", "c"])]
    assert list(found[2].stated) == ["b"]


def chart_texts(values: dict[str, Any]) -> tuple[list[str], list[str], Any]:
    """Return the chart's x tick labels and legend entries, and the chart."""
    with charts.drawing():
        chart = charts.positions_chart(values)
        assert chart is not None
        chart.figure.canvas.draw()
        ticks = [t.get_text() for t in chart.figure.axes[1].get_xticklabels() if t.get_text()]
        legend = [t.get_text() for t in chart.figure.legends[0].get_texts()]
    return ticks, legend, chart


def test_a_debate_of_proposals_only_names_its_one_step_once() -> None:
    values = phases([{"a": position("p", "42"), "b": position("p", "41"), "c": position("p", "7")}])
    ticks, legend, _ = chart_texts(values)
    assert ticks == ["proposed"]
    assert legend == ["41", "42", "7"]


def test_a_phase_debate_names_each_step_and_a_long_one_every_few() -> None:
    few = phases([{"a": position("p", "1")}, {"a": position("p", "2")}, {"a": position("p", "3")}])
    assert chart_texts(few)[0] == ["proposed", "1", "2"]
    many = phases([{"a": position("p", str(n % 3))} for n in range(31)])
    assert chart_texts(many)[0] == ["proposed", "5", "10", "15", "20", "25", "30"]


def test_a_long_roundtable_keeps_one_width_a_bounded_legend_and_turn_ticks() -> None:
    agents = ["architect", "security", "kiss"]
    stated = [
        (agents[n % 3], position(f"Idea {n}: a different plan for turn {n}", f"plan {n % 400}"))
        for n in range(10_000)
    ]
    ticks, legend, chart = chart_texts(roundtable(stated))
    assert len(legend) == 7 and legend[-1] == "other (394 stances)"
    assert chart.figure.get_size_inches()[0] == 8.0
    assert "proposed" not in ticks and all(re.fullmatch(r"[\d,]+", t) for t in ticks)
    assert len(ticks) <= stance_chart.MAX_TICKS + 1
    svg = charts.positions_svg(roundtable(stated))
    assert svg is not None
    ids = [g.get("id") or "" for g in ET.fromstring(svg).iter(f"{SVG}g")]
    columns = {i.rsplit("-", 1)[1] for i in ids if re.fullmatch(r"stance-\d+-at-\d+", i)}
    assert len(columns) == stance_chart.MAX_COLUMNS  # 10,000 turns, 100 columns of 100 turns
    assert "turn 1 to turn 100: " in svg and "% of agents on average hold" in svg


def test_the_legend_names_the_stances_not_the_sentences() -> None:
    plans = ["Redis", "Memcached", "Postgres"]
    stated = [
        (
            ["a", "b", "c"][n % 3],
            position(f"Use {plans[n % 3]} as the cache, sized for {n} sessions"),
        )
        for n in range(300)
    ]
    _, legend, _ = chart_texts(roundtable(stated))
    assert len(legend) == 3  # 300 different sentences, three stances


def test_the_page_table_has_a_row_per_step_and_a_column_per_agent() -> None:
    stated = [(["a", "b", "c"][n % 3], position("p", str(n % 2))) for n in range(1000)]
    values = roundtable(stated)
    table = positions_view(values, range(51, 101))
    assert table is not None
    assert table["agents"] == ["a", "b", "c"]  # 1,000 turns, still three columns of agents
    assert [row["label"] for row in table["rows"]] == [f"turn {n}" for n in range(51, 101)]
    row = table["rows"][0]
    assert [(g["stance"], g["agents"]) for g in row["agreeing"]] == [
        ("0", ["a", "c"]),
        ("1", ["b"]),
    ]
    assert list(row["cells"]) == ["c"]
    assert row["cells"]["c"]["colour"] == stance_chart.PALETTE[0]
    assert positions_view(values, range(2000, 2050)) is None


def test_the_report_names_the_stances_under_its_positions() -> None:
    values = phases(
        [{"a": position("p", "42"), "b": position("p", "41")}, {"a": position("p", "42")}]
    )
    assert stance_lines(values["transcript"]) == [
        "",
        "Stances, grouped by answer, most held first: 42 (2 positions); 41 (1 position).",
    ]
    report = render_report({**values, "problem": "What is 6 x 7?"})
    section = report.split("\n## Positions\n", 1)[1]
    assert "Stances, grouped by answer, most held first: 42 (2 positions)" in section
    many = [position(f"Option {n}", f"choice {n}") for n in range(9)]
    line = stance_lines([{"position": p} for p in many])[1]
    assert line.endswith("; other (3 stances, 3 positions).")
