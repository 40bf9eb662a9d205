"""The Markdown report and the JSON export of a real debate on the fake model."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from markdown_it import MarkdownIt

from debate_engine.app.report import export_state, render_report


def headings(markdown: str) -> list[tuple[int, str]]:
    tokens = MarkdownIt().parse(markdown)
    return [(int(t.tag[1]), tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]


def table(markdown: str, title: str) -> list[list[str]]:
    """The body rows of the first table after the ``## title`` heading."""
    section = markdown.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_report_has_every_section_in_order(debate) -> None:
    out = debate(rounds=2, agents="architect,security", model="fake:words=200", summary_threshold=1500)
    assert out["summary_log"], "this debate must summarize"
    report = render_report(out)
    top = [text for level, text in headings(report) if level <= 2]
    assert top == ["Debate report", "Problem", "Agents", "Round 1", "Round 2", "Summaries", "Final solution",
                   "Tokens and latency"]
    found = {text for _, text in headings(report)}
    assert {"Proposals", "Critiques", "Refinements", "architect on security", "security on architect"} <= found
    assert [row[0] for row in table(report, "Agents")] == ["architect", "security", "judge"]
    assert len(table(report, "Summaries")) == len(out["summary_log"])


def test_the_figures_count_every_call(debate) -> None:
    out = debate(rounds=2, agents="architect,performance,security", summarize=False)
    report = render_report(out)
    assert "\n## Summaries\n" not in report
    calls = {(row[0], row[1]): int(row[2]) for row in table(report, "Tokens and latency")}
    expected: dict[tuple[str, str], int] = {}
    for agent in ("architect", "performance", "security"):
        # one proposal; per round two critiques (one of each other agent) and one refinement
        expected |= {(agent, "proposal"): 1, (agent, "critique"): 2 * 2, (agent, "refinement"): 2}
    expected[("judge", "synthesis")] = 1
    assert calls == expected
    output_tokens = {(row[0], row[1]): int(row[4]) for row in table(report, "Tokens and latency")}
    by_turn: Counter[tuple[str, str]] = Counter()
    for turn in out["transcript"]:
        by_turn[(turn["speaker"], turn["kind"])] += turn["usage"]["output_tokens"]
    assert output_tokens == dict(by_turn)


def test_an_unfinished_debate_says_so(debate) -> None:
    out = debate(rounds=1, agents="architect,security")
    unfinished = {**out, "solution": None, "transcript": [t for t in out["transcript"] if t["kind"] != "synthesis"]}
    report = render_report(unfinished)
    assert "*No solution yet: the debate did not finish.*" in report
    assert report.count("\n#### ") == 2 + 2 + 2


def test_code_fences_in_content_cannot_break_the_report(debate) -> None:
    out = debate(rounds=1, agents="architect,security")
    evil = "Here is code:\n```python\nprint('never closed')\n\n## Fake heading\n````\n~~~"
    for turn in out["transcript"]:
        turn["content"] = evil
    out["solution"]["description"] = evil
    found = [text for _, text in headings(render_report(out))]
    assert "Fake heading" not in found
    assert found.count("Final solution") == 1 and "Tokens and latency" in found and "Refinements" in found


def test_the_export_keeps_the_debate_and_no_prompt_text(debate) -> None:
    out = debate(rounds=1, agents="architect,kiss")
    exported = export_state(out)
    text = json.dumps(exported)
    assert json.loads(text) == exported, "the export is plain JSON"
    assert "system_prompt" not in text and "summary_prompt" not in text
    profiles: list[dict[str, Any]] = [*out["settings"]["agents"], out["settings"]["judge"]]
    for profile in profiles:
        assert profile["system_prompt"][:60] not in text
    assert [a["id"] for a in exported["agents"]] == ["architect", "kiss"] and exported["judge"]["id"] == "judge"
    assert exported["agents"][0]["model"] == "fake" and exported["settings"]["rounds"] == 1
    assert exported["transcript"] == out["transcript"] and exported["solution"] == out["solution"]
