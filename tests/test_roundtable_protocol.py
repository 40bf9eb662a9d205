"""A roundtable stays a roundtable wherever it runs: queued for a worker, resubmitted, stopped before setup.

The worker's own path (``drive_thread``) runs here on an in-memory saver;
tests/integration/test_workers.py runs it on real PostgreSQL workers.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine import Context, RoundtableContext, compile_debate, compile_roundtable
from debate_engine.app.cli import submit
from debate_engine.app.cli.main import _parser, main
from debate_engine.app.store.queue import drive_thread, new_job

TEAM = {"model": "fake:words=10", "agents": "kiss,security"}


def graphs_on(saver: Any) -> dict[str, Any]:
    """Return what a worker holds: each protocol's graph on the shared saver."""
    return {
        "phases": compile_debate(checkpointer=saver),
        "roundtable": compile_roundtable(checkpointer=saver),
    }


def kinds(values: dict[str, Any]) -> list[str]:
    return [t["kind"] for t in values["transcript"]]


def test_a_queued_roundtable_runs_as_a_roundtable_on_a_worker() -> None:
    job = new_job("rt", "Design a cache", {**TEAM, "turns": 3}, "roundtable")
    values = asyncio.run(drive_thread(graphs_on(InMemorySaver()), name="w", **job.task_kwargs))
    assert values["settings"]["protocol"] == "roundtable"
    assert kinds(values) == ["message"] * 3 + ["synthesis"]
    assert [t["speaker"] for t in values["transcript"]] == ["kiss", "security", "kiss", "judge"]


def test_a_resubmitted_roundtable_continues_on_its_own_protocol() -> None:
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "rt"}}
    compile_roundtable(checkpointer=saver, interrupt_before=["turn"]).invoke(
        {"problem": "Design a cache"}, config, context=RoundtableContext(**TEAM, turns=4)
    )
    # `debate submit --thread-id rt` alone: no problem, no settings, the default protocol.
    values = asyncio.run(drive_thread(graphs_on(saver), "rt", "", {}, "w", "phases"))
    assert values["settings"]["protocol"] == "roundtable" and kinds(values) == ["message"] * 4 + [
        "synthesis"
    ]


def test_submit_queues_a_roundtable_with_its_settings(tmp_path: Path) -> None:
    args = _parser().parse_args(
        [
            "submit",
            "--protocol",
            "roundtable",
            "--turns",
            "3",
            "--order",
            "moderator",
            "--model",
            "fake",
            "Design a cache",
        ]
    )
    [entry] = submit.entries_of(args)
    assert entry.protocol == "roundtable" and entry.context == {
        "model": "fake",
        "turns": 3,
        "order": "moderator",
    }
    lines = [{"problem": "a", "protocol": "roundtable", "turns": 2}, {"problem": "b"}]
    first, second = submit.parse_problems(
        "\n".join(json.dumps(x) for x in lines), {"model": "fake"}, tmp_path
    )
    assert (first.protocol, first.context["turns"], second.protocol) == ("roundtable", 2, None)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["submit", "--turns", "3", "--model", "fake", "p"], "add --protocol roundtable"),
        (["submit", "--problems", "f.jsonl", "--summary-every", "5"], "add --protocol roundtable"),
    ],
)
def test_roundtable_options_without_the_protocol_are_refused(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--db", "postgresql://127.0.0.1:1/x"]) == 2
    assert said in capsys.readouterr().err


def test_a_roundtable_setting_on_a_phase_line_is_named(tmp_path: Path) -> None:
    from debate_engine.config.resolve import ConfigError

    with pytest.raises(ConfigError) as raised:
        submit.parse_problems(json.dumps({"problem": "p", "turns": 3}), {"model": "fake"}, tmp_path)
    assert (
        raised.value.problems[0]
        == 'line 1: turns: a roundtable setting; add "protocol": "roundtable"'
    )


def test_resubmitting_a_thread_under_the_other_protocol_is_refused() -> None:
    status = {"phase": "turn", "problem": "p"}
    assert submit._refusal(submit.Entry(0, "rt", "", {}, None), status, None, "roundtable") is None
    assert (
        submit._refusal(submit.Entry(0, "rt", "", {}, "roundtable"), status, None, "roundtable")
        is None
    )
    said = submit._refusal(submit.Entry(0, "rt", "", {}, "phases"), status, None, "roundtable")
    assert said and "holds a roundtable" in said and "drop --protocol" in said


def test_a_roundtable_stopped_before_setup_resumes_as_a_roundtable(tmp_path: Path) -> None:
    db, config = tmp_path / "pre.sqlite", {"configurable": {"thread_id": "pre"}}
    with sqlite3.connect(
        db, check_same_thread=False
    ) as conn:  # as from Python or Studio: no settings in the input
        stopped = compile_roundtable(checkpointer=SqliteSaver(conn), interrupt_before=["setup"])
        stopped.invoke(
            {"problem": "Design a cache"}, config, context=RoundtableContext(**TEAM, turns=3)
        )
        stop = stopped.get_state(config)
        assert stop.next == ("setup",) and "status" not in stop.values  # setup has not run
    assert (
        main(["resume", "pre", "--db", str(db), "--quiet"]) == 0
    )  # a process that never saw the context
    with sqlite3.connect(db, check_same_thread=False) as conn:
        values = compile_roundtable(checkpointer=SqliteSaver(conn)).get_state(config).values
    assert (
        values["settings"]["protocol"] == "roundtable"
        and values["settings"]["roundtable"]["max_turns"] == 3
    )
    assert kinds(values) == ["message"] * 3 + ["synthesis"]
    assert [a["id"] for a in values["settings"]["agents"]] == ["kiss", "security"]


def test_a_phase_debate_stopped_before_setup_resumes_with_its_own_settings(tmp_path: Path) -> None:
    db, config = tmp_path / "pre.sqlite", {"configurable": {"thread_id": "pre"}}
    with sqlite3.connect(db, check_same_thread=False) as conn:  # settings only in the run's context
        stopped = compile_debate(checkpointer=SqliteSaver(conn), interrupt_before=["setup"])
        stopped.invoke({"problem": "Design a cache"}, config, context=Context(**TEAM, rounds=1))
    assert main(["resume", "pre", "--db", str(db), "--quiet"]) == 0
    with sqlite3.connect(db, check_same_thread=False) as conn:
        values = compile_debate(checkpointer=SqliteSaver(conn)).get_state(config).values
    assert [a["id"] for a in values["settings"]["agents"]] == [
        "kiss",
        "security",
    ]  # not the default agents
    assert values["settings"]["rounds"] == 1 and values["settings"]["protocol"] == "phases"
    assert kinds(values) == ["proposal"] * 2 + ["critique"] * 2 + ["refinement"] * 2 + ["synthesis"]


@pytest.mark.parametrize(
    "context", [None, {"model": "fake", "turns": 2}, RoundtableContext(model="fake", turns=2)]
)
def test_every_roundtable_input_is_marked_whatever_the_caller_passed(context: Any) -> None:
    graph, config = (
        compile_roundtable(interrupt_before=["setup"]),
        {"configurable": {"thread_id": "m"}},
    )
    graph.invoke({"problem": "p"}, config, context=context)
    stored = graph.get_state(config).values["context"]
    assert stored["protocol"] == "roundtable"
    assert stored.get("turns") == (2 if context else None)
