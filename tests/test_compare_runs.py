"""``debate compare`` end to end on the fake population: outputs, matched budgets, resume, debate vs vote,
and the roundtable."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare.tasks import builtin_tasks, is_correct
from debate_engine.providers.fake import FakeChatModel

POPULATION = ["--model", "fake:solve=0.6,conform=0.5", "--rounds", "1"]


def _compare(tmp_path: Path, *argv: str) -> dict[str, Any]:
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "compare",
                *argv,
                *POPULATION,
                "--db",
                str(tmp_path / "c.sqlite"),
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return json.loads(out.read_text())


def _by_label(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["protocol"]: p for p in found["protocols"]}


def test_the_table_json_and_chart_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md, svg = tmp_path / "r.md", tmp_path / "r.svg"
    found = _compare(
        tmp_path,
        "builtin:arithmetic:6",
        "--protocols",
        "single,vote,debate",
        "--md",
        str(md),
        "--plot",
        str(svg),
    )
    table = capsys.readouterr().out
    assert table == md.read_text() and "| single |" in table and "| debate |" in table
    chart = svg.read_text()
    drawn = [g.get("id") for g in ET.fromstring(chart).iter("{http://www.w3.org/2000/svg}g")]
    assert chart.startswith("<svg") and [g for g in drawn if g and g.startswith("protocol-")] == [
        "protocol-0",
        "protocol-1",
        "protocol-2",
    ]  # one point and interval per protocol
    assert len(found["runs"]) == 18 and {"flips", "confidently_wrong_consensus"} <= set(
        _by_label(found)["debate"]
    )


def test_vote_is_sized_to_the_debates_tokens(tmp_path: Path) -> None:
    figures = _by_label(
        _compare(
            tmp_path,
            "builtin:arithmetic:8",
            "--protocols",
            "single,vote,debate",
            "--budget",
            "auto",
        )
    )
    debate, vote = figures["debate"]["tokens_per_task"], figures["vote"]["tokens_per_task"]
    assert abs(vote - debate) <= 0.15 * debate, (vote, debate)
    assert figures["vote"]["label"] != "vote-5"


def test_a_fixed_budget_sizes_the_vote_from_single(tmp_path: Path) -> None:
    # about six answers' worth: an even vote wastes a voter, so the odd size nearest it
    figures = _by_label(
        _compare(tmp_path, "builtin:arithmetic:4", "--protocols", "single,vote", "--budget", "1300")
    )
    single = figures["single"]["tokens_per_task"]
    k = int(figures["vote"]["label"].split("-")[1])
    assert k % 2 == 1 and abs(k * single - 1300) <= single, (k, single)


def test_running_it_again_re_sends_no_call_and_gives_the_same_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [
        "builtin:arithmetic:5",
        "--protocols",
        "single,vote,debate-vote,roundtable",
        "--votes",
        "3",
        "--turns",
        "4",
    ]
    first = _compare(tmp_path, *argv)
    table = capsys.readouterr().out
    calls: list[int] = []
    original = FakeChatModel._reply
    monkeypatch.setattr(
        FakeChatModel, "_reply", lambda self, *a, **k: calls.append(1) or original(self, *a, **k)
    )
    again = _compare(tmp_path, *argv, "--resume")
    assert calls == [] and again == first and capsys.readouterr().out == table


def test_a_debate_of_conformers_is_not_significantly_above_the_vote(tmp_path: Path) -> None:
    # 40 debates rather than 300: a debate is about 13 calls, and the claim is about the sign of the difference.
    figures = _by_label(
        _compare(tmp_path, "builtin:arithmetic:40", "--protocols", "vote,debate", "--votes", "5")
    )
    debate = figures["debate"]
    assert not (debate["accuracy"] > figures["vote"]["accuracy"] and debate["vs_vote"]["p"] <= 0.05)
    assert sum(debate["flips"].values()) == 3 * 40


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_the_cost_cap_holds_over_the_whole_comparison(tmp_path: Path, jobs: str) -> None:
    config = tmp_path / "prices.json"  # a dollar per output token: each single run costs about $80
    config.write_text(json.dumps({"prices": {POPULATION[1]: {"input": 0, "output": 1_000_000}}}))
    found = _compare(
        tmp_path,
        "builtin:arithmetic:6",
        "--protocols",
        "single",
        "--max-cost",
        "200",
        "--jobs",
        jobs,
        "--config",
        str(config),
        "--max-output-tokens",
        "100",
    )
    spent = sum(r["cost"] for r in found["runs"])
    assert 0 < spent <= 200, (
        "the cap holds over the whole comparison, runs in flight together included"
    )
    assert len(found["runs"]) < 6, (
        "runs the money could not pay for are not counted (not as wrong answers)"
    )
    assert all(r["answer"] is not None for r in found["runs"])


def _stored(db: Path, thread: str, graph: str = "roundtable") -> dict[str, Any]:
    """Return a run's final state, read back from the comparison's database."""
    from debate_engine.app.store.database import open_checkpointer
    from debate_engine.graph.by_protocol import graph_for

    async def read() -> dict[str, Any]:
        async with open_checkpointer(str(db)) as saver:
            return dict(
                (
                    await graph_for(graph, saver).aget_state(
                        {"configurable": {"thread_id": thread}}
                    )
                ).values
            )

    return asyncio.run(read())


def test_debate_scores_the_judges_answer_and_debate_vote_the_agents_plurality(
    tmp_path: Path,
) -> None:
    found = _compare(tmp_path, "builtin:arithmetic:10", "--protocols", "debate,debate-vote")
    overruled = 0
    for run in found["runs"]:
        verdict = _stored(tmp_path / "c.sqlite", run["thread"], "debate")["solution"]["verdict"]
        if run["protocol"] == "debate":
            assert run["answer"] == verdict["judge_answer"], (
                "a judged debate is scored by its judge"
            )
            overruled += verdict["judge_answer"] != verdict["answer"]
        else:
            assert verdict["method"] == "voting" and run["answer"] == verdict["answer"], (
                "by the agents' count"
            )
    assert overruled > 0, (
        "the judge's answer is its own: the debate row can differ from the plurality's"
    )


def test_a_roundtable_is_compared_with_its_accuracy_tokens_and_flips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _compare(tmp_path, "builtin:arithmetic:8", "--protocols", "single,roundtable")
    roundtable = _by_label(found)["roundtable"]
    assert roundtable["label"] == "roundtable-9", "3 turns per agent by default"
    assert f"| roundtable-9 | {roundtable['accuracy']:.3f}" in capsys.readouterr().out
    runs = [r for r in found["runs"] if r["protocol"] == "roundtable-9"]
    assert roundtable["runs"] == 8 and roundtable["correct"] == sum(r["correct"] for r in runs)
    assert roundtable["accuracy"] == roundtable["correct"] / 8
    assert roundtable["tokens_per_task"] == sum(r["tokens"] for r in runs) / 8 > 0
    assert (
        sum(roundtable["flips"].values()) == 3 * 8 and "confidently_wrong_consensus" in roundtable
    )
    for (
        run
    ) in runs:  # each run is a real roundtable of 9 turns; its answer and flips are read from it
        values = _stored(tmp_path / "c.sqlite", run["thread"])
        messages = [t for t in values["transcript"] if t["kind"] == "message" and t.get("position")]
        assert values["settings"]["protocol"] == "roundtable" and len(messages) == 9
        judged = values["solution"]["verdict"]["judge_answer"]
        assert run["answer"] == judged, "the judge's answer, not the agents' count"
        assert (
            run["tokens"]
            == values["spend"]["total"]["input_tokens"] + values["spend"]["total"]["output_tokens"]
        )
        said = {
            a: [t["position"]["answer"] for t in messages if t["speaker"] == a]
            for a in {t["speaker"] for t in messages}
        }
        task = next(t for t in builtin_tasks("builtin:arithmetic:8") if t.id == run["task"])
        assert sorted(run["flips"]) == sorted(
            [is_correct(task, s[0]), is_correct(task, s[-1])] for s in said.values()
        )
