"""The Markdown report and the JSON export of a real debate on the fake model."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from debate_engine.app.reports.markdown import export_state, render_report


def headings(markdown: str) -> list[tuple[int, str]]:
    tokens = MarkdownIt().parse(markdown)
    return [
        (int(t.tag[1]), tokens[i + 1].content)
        for i, t in enumerate(tokens)
        if t.type == "heading_open"
    ]


def table(markdown: str, title: str, level: int = 2) -> list[list[str]]:
    """Return the body rows of the first table after the ``## title`` heading (``###`` with level 3)."""
    mark = "#" * level
    section = (
        markdown.split(f"\n{mark} {title}\n", 1)[1].split(f"\n{mark} ", 1)[0].split("\n### ", 1)[0]
    )
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_report_has_every_section_in_order(debate) -> None:
    out = debate(
        rounds=2, agents="architect,security", model="fake:words=200", summary_threshold=1500
    )
    assert out["summary_log"], "this debate must summarize"
    report = render_report(out)
    top = [text for level, text in headings(report) if level <= 2]
    assert top == [
        "Debate report",
        "Problem",
        "Agents",
        "Round 1",
        "Round 2",
        "Summaries",
        "Positions",
        "Final solution",
        "Verdict",
        "Figures",
    ]
    found = {text for _, text in headings(report)}
    assert {
        "Proposals",
        "Critiques",
        "Refinements",
        "architect on security",
        "security on architect",
        "By agent",
        "By agent and phase",
    } <= found
    assert [row[0] for row in table(report, "Agents")] == ["architect", "security", "judge"]
    assert len(table(report, "Summaries")) == len(out["summary_log"])


def test_the_figures_count_every_call(debate) -> None:
    out = debate(rounds=2, agents="architect,performance,security", summarize=False)
    report = render_report(out)
    assert "\n## Summaries\n" not in report
    calls = {(row[0], row[1]): int(row[2]) for row in table(report, "By agent and phase", 3)}
    expected: dict[tuple[str, str], int] = {}
    for agent in ("architect", "performance", "security"):
        # one proposal; per round two critiques (one of each other agent) and one refinement
        expected |= {(agent, "proposal"): 1, (agent, "critique"): 2 * 2, (agent, "refinement"): 2}
    expected[("judge", "synthesis")] = 1
    assert calls == expected
    output_tokens = {
        (row[0], row[1]): int(row[4]) for row in table(report, "By agent and phase", 3)
    }
    by_turn: Counter[tuple[str, str]] = Counter()
    for turn in out["transcript"]:
        by_turn[(turn["speaker"], turn["kind"])] += turn["usage"]["output_tokens"]
    assert output_tokens == dict(by_turn)


def test_an_unfinished_debate_says_so(debate) -> None:
    out = debate(rounds=1, agents="architect,security")
    unfinished = {
        **out,
        "solution": None,
        "transcript": [t for t in out["transcript"] if t["kind"] != "synthesis"],
    }
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
    assert found.count("Final solution") == 1 and "Figures" in found and "Refinements" in found


def test_the_export_keeps_the_debate_and_no_prompt_text(debate) -> None:
    out = debate(rounds=1, agents="architect,kiss")
    exported = export_state(out)
    text = json.dumps(exported)
    assert json.loads(text) == exported, "the export is plain JSON"
    assert "system_prompt" not in text and "summary_prompt" not in text
    profiles: list[dict[str, Any]] = [*out["settings"]["agents"], out["settings"]["judge"]]
    for profile in profiles:
        assert profile["system_prompt"][:60] not in text
    assert [a["id"] for a in exported["agents"]] == ["architect", "kiss"] and exported["judge"][
        "id"
    ] == "judge"
    assert exported["agents"][0]["model"] == "fake" and exported["settings"]["rounds"] == 1
    assert exported["transcript"] == out["transcript"] and exported["solution"] == out["solution"]


def hand_made() -> dict[str, Any]:
    """Four turns and three summaries whose figures are worked out by hand below."""
    from tests.conftest import make_turn

    specs = [
        (0, "a", "proposal", None, 100, 40, 1000, 1001.0),
        (1, "b", "proposal", None, 120, 60, 3000, 1001.2),
        (2, "a", "critique", "b", 200, 80, 2000, 1004.0),
        (3, "judge", "synthesis", None, 300, 100, 6000, 1180.0),
    ]
    transcript = []
    for seq, speaker, kind, target, prompt, completion, latency, at in specs:
        turn: dict[str, Any] = dict(
            make_turn(seq, speaker=speaker, kind=kind, target=target, round_no=1)
        )
        turn.update(
            usage={
                "input_tokens": prompt,
                "output_tokens": completion,
                "total_tokens": prompt + completion,
            },
            latency_ms=latency,
            truncated=kind == "critique",
            created_at=at,
        )
        transcript.append(turn)

    def summary(
        ident: str,
        agent: str,
        status: str,
        calls: int,
        usage: tuple[int, int] | None,
        latency: int,
        before: int,
        after: int,
        at: float,
    ) -> dict[str, Any]:
        return {
            "id": ident,
            "agent_id": agent,
            "round": 1,
            "depth": 0,
            "strategy": "rolling",
            "reason": "overflow",
            "status": status,
            "calls": calls,
            "latency_ms": latency,
            "tokens_before": before,
            "tokens_after": after,
            "error": "cut twice" if status == "failed" else None,
            "created_at": at,
            "usage": {
                "input_tokens": usage[0],
                "output_tokens": usage[1],
                "total_tokens": sum(usage),
            }
            if usage
            else None,
        }

    # Records from before attempts were kept: a summary's calls say how many requests it made.
    log = [
        summary("s1", "a", "ok", 2, (50, 20), 800, 500, 120, 1005.0),
        summary("s2", "b", "failed", 0, None, 0, 400, 0, 1005.5),
        summary("s3", "judge", "ok", 1, (70, 30), 500, 900, 200, 1006.0),
    ]
    status = {
        "problem": "p",
        "phase": "done",
        "round": 1,
        "rounds": 1,
        "turns": 4,
        "summaries": 3,
        "tokens": 0,
        "started_at": 1000.0,
        "updated_at": 1185.0,
    }
    return {
        "problem": "p",
        "settings": {},
        "transcript": transcript,
        "summary_log": log,
        "solution": None,
        "status": status,
    }


def test_the_figures_are_the_sums_worked_out_by_hand() -> None:
    report = render_report(hand_made())
    figures = dict((row[0], row[1]) for row in table(report, "Figures"))
    assert figures["wall time"] == "3 min 05 s (set-up to last step)"  # 1185 - 1000 s
    # steps: proposals at 1001.2 (ran 1.2 s), the critique at 1004 (2.8 s), the summaries until 1006 (2 s); the
    # synthesis at 1180 took 6 s of model time, so 174 - 6 = 168 s were a stop; then 5 s to the last step
    assert figures["time running"].startswith("17.0 s (") and figures["time stopped"].startswith(
        "2 min 48 s ("
    )
    assert figures["model calls"] == "7 (4 turns, 3 summary calls)"  # summary calls 2 + 0 + 1
    assert figures["prompt tokens"] == "840"  # 100 + 120 + 200 + 300 + 50 + 70
    assert figures["completion tokens"] == "330"  # 40 + 60 + 80 + 100 + 20 + 30
    assert figures["total tokens"] == "1170"
    assert figures["summaries"].startswith(
        "2 made, 1080 tokens saved"
    )  # (500 - 120) + (900 - 200); s2 failed
    assert figures["retries"].startswith("1 extra summary call (")  # s1 took 2 calls
    assert figures["failures"].startswith("1 failed summaries; 0 requests that returned nothing")
    assert figures["cut at the output limit"] == "1 turn: critique:r1:a->b"
    # per call: 1000, 3000, 2000, 6000, s1 800 / 2 twice, s3 500 -> 13300 / 7 = 1900 ms
    assert figures["latency per call"].startswith("mean 1.90 s, max 6.00 s")
    by_agent = table(report, "By agent", 3)
    assert by_agent == [
        ["a", "4", "350", "140", "0.95", "2.00"],  # latencies 1000, 2000, 400, 400
        ["b", "1", "120", "60", "3.00", "3.00"],
        ["judge", "2", "370", "130", "3.25", "6.00"],  # 6000 and 500
        ["**total**", "7", "840", "330", "1.90", "6.00"],
    ]
    phases = {(row[0], row[1]): row[2:] for row in table(report, "By agent and phase", 3)}
    assert phases[("a", "critique")] == ["1", "200", "80", "2.00", "1"]
    assert phases[("a", "summary")] == ["2", "50", "20", "0.40", "0"]
    assert phases[("b", "summary")] == ["0", "0", "0", "0.00", "0"]
    assert "**cut at the output limit**" in report.split("#### a on b", 1)[1].split("\n#### ", 1)[0]
    assert report.count("**cut at the output limit**") == 1


def test_report_of_a_saved_json_or_thread_is_what_the_run_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from debate_engine.app.cli.main import main

    state, written = tmp_path / "debate.json", tmp_path / "run.md"
    assert (
        main(
            [
                "run",
                "--model",
                "fake",
                "--rounds",
                "2",
                "--agents",
                "kiss,testing",
                "--quiet",
                "--thread-id",
                "one",
                "--db",
                str(tmp_path / "d.sqlite"),
                "--output",
                str(state),
                "--report",
                str(written),
                "Design a cache",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["report", str(state)]) == 0
    from_json = capsys.readouterr().out
    assert main(["report", "--thread", "one", "--db", str(tmp_path / "d.sqlite")]) == 0
    from_thread = capsys.readouterr().out
    chart = "![Positions over rounds](run.positions.svg)\n\n"  # a file's report shows the chart beside it
    assert from_json == written.read_text().replace(chart, "") == from_thread
    assert "\n## Figures\n" in from_json
    assert main(["report", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("order", ["round-robin", "moderator"])
def test_a_roundtable_report_shows_every_turn_and_the_moderation(
    order: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from debate_engine.app.cli.main import main

    state, written = tmp_path / "rt.json", tmp_path / "rt.md"
    assert (
        main(
            [
                "run",
                "--protocol",
                "roundtable",
                "--turns",
                "6",
                "--order",
                order,
                "--agents",
                "kiss,security",
                "--model",
                "fake:words=12",
                "--quiet",
                "--db",
                str(tmp_path / "d.sqlite"),
                "--output",
                str(state),
                "--report",
                str(written),
                "Design a cache",
            ]
        )
        == 0
    )
    report, values = written.read_text(), json.loads(state.read_text())
    messages = [t for t in values["transcript"] if t["kind"] == "message"]
    top = [text for level, text in headings(report) if level <= 2]
    moderated = ["Moderation"] if order == "moderator" else []
    assert top == [
        "Debate report",
        "Problem",
        "Agents",
        "Turns",
        *moderated,
        "Positions",
        "Final solution",
        "Verdict",
        "Figures",
    ]
    assert [text for level, text in headings(report) if level == 3][: len(messages)] == [
        f"Turn {t['round']}: {t['speaker']}" for t in messages
    ]
    turns = report.split("\n## Turns\n", 1)[1].split("\n## ", 1)[0]
    assert all(f"> {t['content']}" in turns for t in messages)
    if order == "moderator":
        choice = values["moderation"]
        assert (
            f"for turn {choice['turn']}: **{choice['speaker']}**" in report
            and f"> {choice['reason']}" in report
        )
    calls = dict((row[0], row[1]) for row in table(report, "Figures"))["model calls"]
    assert calls.startswith(f"{values['spend']['total']['calls']} ({len(messages) + 1} turns, ")
    capsys.readouterr()
    chart = "![Positions over rounds](rt.positions.svg)\n\n"
    assert main(["report", str(state)]) == 0 and capsys.readouterr().out == report.replace(
        chart, ""
    )
