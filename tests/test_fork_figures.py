"""A fork's figures are its own, it starts where the original's round ended, and it decides its own stop.

The forks here are made in process on the in-memory saver, as ``debate fork`` makes them (``fork_point``,
``fork_settings``, ``fork_values``, ``write_fork``), so each check takes a second or two.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.app.cli.progress import summary_line
from debate_engine.app.reports.figures import totals
from debate_engine.app.reports.markdown import render_report
from debate_engine.app.store.forking import (
    Changes,
    fork_point,
    fork_settings,
    fork_values,
    origin_of,
    write_fork,
)

PROBLEM = "Design a rate limiter"
HOUR = 3600.0


def thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


def aged(values: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Return the same state as if it had been made ``seconds`` earlier: an original that finished a while ago."""

    def older(record: dict[str, Any]) -> dict[str, Any]:
        return (
            {**record, "created_at": record["created_at"] - seconds}
            if record.get("created_at")
            else record
        )

    status = values["status"]
    return {
        **values,
        "transcript": [older(t) for t in values["transcript"]],
        "summary_log": [older(r) for r in values.get("summary_log", [])],
        "status": {
            **status,
            "started_at": status["started_at"] - seconds,
            "updated_at": status["updated_at"] - seconds,
        },
    }


def fork(
    context: Context, round_no: int, changes: Changes, problem: str = PROBLEM, age: float = 0.0
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``context`` as thread ``o``, fork it at the end of ``round_no`` as thread ``f`` and run the fork.

    ``age`` makes the original look that many seconds older than the fork. Both threads' final states.
    """

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        saver = InMemorySaver()
        graph = compile_debate(checkpointer=saver)
        await graph.ainvoke({"problem": problem}, thread("o"), context=context)
        point = await fork_point(saver, graph, "o", round_no, "memory")
        if age:
            point = point._replace(values=aged(point.values, age))
        values = fork_values(
            point, *fork_settings(point.values, changes, round_no), origin_of(point, "o", round_no)
        )
        config = await write_fork(graph, point, values, "f")
        await graph.ainvoke(None, config)
        return dict((await graph.aget_state(thread("o"))).values), dict(
            (await graph.aget_state(config)).values
        )

    return asyncio.run(run())


@pytest.fixture(scope="module")
def aged_fork() -> tuple[dict[str, Any], dict[str, Any]]:
    """3 agents, 2 rounds, no summaries; forked at round 1 an hour after the original ended."""
    return fork(
        Context(model="fake", agents="architect,security,kiss", rounds=2, summarize=False),
        1,
        Changes(),
        age=HOUR,
    )


def test_a_forks_final_line_counts_its_own_calls_and_no_stop(
    aged_fork: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Round 2 and the synthesis: 6 critiques, 3 refinements, 1 synthesis; the hour before the fork is not shown."""
    _, values = aged_fork
    assert (
        len(values["transcript"]) == 12 + 10
    )  # round 1's 3 proposals, 6 critiques and 3 refinements were kept
    found = totals(values)
    assert (found["calls"], found["stopped_s"]) == (10, 0) and found["running_s"] < 60
    line = summary_line(values)
    assert line.startswith("took ") and ": 10 model calls, " in line and "stopped" not in line


def test_the_kept_rounds_cost_is_kept_apart(
    aged_fork: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """The original's calls up to the fork point (3 proposals, 6 critiques, 3 refinements) live in the origin."""
    original, values = aged_fork
    origin = values["forked_from"]
    assert origin["turns"] == 12 and origin["spent"]["calls"] == 12 and origin["summaries"] == 0
    assert (
        origin["spent"]["calls"] + values["spend"]["total"]["calls"]
        == original["spend"]["total"]["calls"]
    )
    assert (
        values["status"]["tokens"] == found_tokens(values)
        and values["status"]["started_at"] > (original["status"]["updated_at"])
    )


def found_tokens(values: dict[str, Any]) -> int:
    total = values["spend"]["total"]
    return int(total["input_tokens"] + total["output_tokens"])


def test_the_reports_model_calls_are_the_forks_own(
    aged_fork: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    report = render_report(aged_fork[1])
    assert "| model calls | 10 (10 turns, " in report
    assert re.search(r"\| time stopped \| 0\.0 s ", report)


def test_the_fork_command_prints_its_own_figures_then_the_kept_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "d.sqlite")
    assert (
        main(
            [
                "run",
                "--model",
                "fake",
                "--agents",
                "architect,security",
                "--rounds",
                "2",
                "--no-summary",
                "--thread-id",
                "o",
                "--db",
                db,
                "--quiet",
                PROBLEM,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["fork", "o", "--round", "1", "--thread-id", "f", "--db", db]) == 0
    lines = capsys.readouterr().err.splitlines()
    own = next(n for n, line in enumerate(lines) if line.startswith("took "))
    assert (
        ": 5 model calls, " in lines[own]
    )  # round 2's 2 critiques and 2 refinements, and the synthesis
    assert lines[own + 1].startswith("kept from o (round 1, not run again): took ")
    assert (
        ": 6 model calls, " in lines[own + 1]
    )  # round 1's 2 proposals, 2 critiques and 2 refinements


def test_a_fork_starts_from_the_first_checkpoint_of_the_rounds_end() -> None:
    """The judge's check of round 2 comes after round 2's first checkpoint: the fork makes its own, with its
    own judge, and none of the original's leaks in."""
    context = Context(
        model="fake", agents="architect,security", rounds=4, stop_rule="quality", summarize=False
    )
    original, values = fork(context, 2, Changes(judge_model="fake:words=30"))
    assert [(a["round"], a["model"]) for a in original["assessments"] if a["round"] >= 2] == [
        (2, "fake"),
        (3, "fake"),
    ]
    assert [(a["round"], a["model"]) for a in values["assessments"] if a["round"] >= 2] == [
        (2, "fake:words=30"),
        (3, "fake:words=30"),
    ]


def test_a_fork_with_more_rounds_runs_on_past_the_originals_stop() -> None:
    """The original converged after round 2 of 3; forked at round 2 with 4 rounds, it runs round 3."""
    context = Context(
        model="fake:solve=1",
        agents="architect,security",
        rounds=3,
        stop_rule="convergence",
        summarize=False,
    )
    original, values = fork(context, 2, Changes(rounds=4), problem="What is 12+34*56?")
    assert original["stopped"] == "convergence" and original["stop_reason"]["round"] == 2
    assert max(t["round"] for t in values["transcript"]) == 3
    assert values["stop_reason"] is None or values["stop_reason"]["round"] == 3


def test_an_agent_added_at_a_fork_proposes_in_the_forks_first_round() -> None:
    context = Context(model="fake", agents="architect,security", rounds=2, summarize=False)
    _, values = fork(context, 1, Changes(agents="architect,security,kiss", rounds=2))
    kiss = [(t["kind"], t["round"]) for t in values["transcript"] if t["speaker"] == "kiss"]
    assert kiss[0] == ("proposal", 2) and ("refinement", 2) in kiss
    assert any(t["kind"] == "critique" and t.get("target") == "kiss" for t in values["transcript"])


def test_the_rows_by_agent_count_only_the_forks_own_calls(
    aged_fork: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    from debate_engine.app.reports.figures import figures

    found = figures(aged_fork[1])
    assert sum(g["calls"] for g in found["by_agent"].values()) == 10
    assert "(none)" not in found["by_agent"]  # no negative "without a record" row
