"""The Markdown report: every section present, and model output cannot break it."""

from __future__ import annotations

from markdown_it import MarkdownIt

from debate_engine.app.report import render_report


def headings(markdown: str) -> list[str]:
    tokens = MarkdownIt().parse(markdown)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]


def test_the_report_has_every_section(debate) -> None:
    out = debate(rounds=2, agents="architect,security", model="fake:words=200", summary_threshold=1500)
    values = {**out, "agents": [], "judge": None}
    report = render_report(values)
    found = headings(report)
    for title in (
        "Problem",
        "Round 1",
        "Round 2",
        "Proposals",
        "Critiques",
        "Refinements",
        "Summaries",
        "Final solution",
        "Tokens and latency",
    ):
        assert title in found, title
    assert "architect on security" in found


def test_code_fences_in_content_cannot_break_the_report(debate) -> None:
    out = debate(rounds=1, agents="architect,security")
    evil = "Here is code:\n```python\nprint('never closed')\n\n## Fake heading\n````\n~~~"
    for turn in out["transcript"]:
        turn["content"] = evil
    report = render_report({**out, "agents": [], "judge": None})
    found = headings(report)
    assert "Fake heading" not in found
    assert found.count("Final solution") == 1 and "Tokens and latency" in found and "Refinements" in found
