"""The command line for the roundtable and the spend cap: run, stop, resume, dry run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.config.context import context_dict


def test_a_roundtable_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rt.json"
    code = main(
        [
            "run",
            "--model",
            "fake:words=10",
            "--protocol",
            "roundtable",
            "--turns",
            "7",
            "--agents",
            "kiss,security",
            "--quiet",
            "--db",
            str(tmp_path / "d.sqlite"),
            "--output",
            str(out),
            "p",
        ]
    )
    assert code == 0
    state = json.loads(out.read_text())
    assert [t["speaker"] for t in state["transcript"]] == ["kiss", "security"] * 3 + [
        "kiss",
        "judge",
    ]
    assert (
        state["settings"]["protocol"] == "roundtable"
        and state["settings"]["roundtable"]["max_turns"] == 7
    )


def test_roundtable_flags_without_the_protocol_are_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--model", "fake", "--turns", "5", "p"]) == 2
    assert "add --protocol roundtable" in capsys.readouterr().err


def test_a_roundtable_stopped_mid_way_resumes_on_its_own_graph(tmp_path: Path) -> None:
    from debate_engine import RoundtableContext, compile_roundtable

    db, config = tmp_path / "d.sqlite", {"configurable": {"thread_id": "rt"}}
    with sqlite3.connect(db, check_same_thread=False) as conn:
        graph = compile_roundtable(checkpointer=SqliteSaver(conn), interrupt_before=["turn"])
        graph.invoke(
            {"problem": "p"}, config, context=RoundtableContext(model="fake:words=10", turns=4)
        )
    assert main(["resume", "rt", "--db", str(db), "--quiet"]) == 0
    with sqlite3.connect(db, check_same_thread=False) as conn:
        values = compile_roundtable(checkpointer=SqliteSaver(conn)).get_state(config).values
    assert values["turn_count"] == 4 and values["solution"]


def test_a_run_stopped_before_setup_resumes_with_its_own_settings(tmp_path: Path) -> None:
    db, config = tmp_path / "pre.sqlite", {"configurable": {"thread_id": "pre"}}
    context = Context(model="fake", agents="kiss,security", rounds=1)
    with sqlite3.connect(
        db, check_same_thread=False
    ) as conn:  # what `debate run` writes before setup
        compile_debate(checkpointer=SqliteSaver(conn)).invoke(
            {"problem": "Design a cache", "context": context_dict(context)},
            config,
            interrupt_before=["setup"],
        )
    assert main(["resume", "pre", "--db", str(db), "--quiet"]) == 0
    with sqlite3.connect(db, check_same_thread=False) as conn:
        settings = (
            compile_debate(checkpointer=SqliteSaver(conn)).get_state(config).values["settings"]
        )
    assert ([a["id"] for a in settings["agents"]], settings["rounds"]) == (["kiss", "security"], 1)


def test_the_spend_cap_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    code = main(
        [
            "run",
            "--model",
            "fake:words=150",
            "--rounds",
            "10",
            "--max-tokens",
            "30000",
            "--quiet",
            "--db",
            str(tmp_path / "d.sqlite"),
            "--output",
            str(out),
            "p",
        ]
    )
    assert code == 0
    state = json.loads(out.read_text())
    total = state["spend"]["total"]
    assert state["solution"] and state["stopped"] == "budget" and state["status"]["tokens"] <= 30000
    assert total["input_tokens"] + total["output_tokens"] == state["status"]["tokens"]


def test_a_dry_run_calls_nothing_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.sqlite"
    code = main(
        [
            "run",
            "--model",
            "fake:words=100",
            "--rounds",
            "3",
            "--max-tokens",
            "10000",
            "--dry-run",
            "--db",
            str(db),
            "p",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("phase\tcalls") and "does NOT fit" in printed
    assert not db.exists()


def test_a_cost_cap_on_an_unpriced_model_exits_2_before_any_call(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000")
    assert main(["run", "--model", "openai:no-such-model-xyz", "--max-cost", "1", "p"]) == 2
    assert "no known price for openai:no-such-model-xyz" in capsys.readouterr().err


def test_max_questions_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "q.json"
    monkeypatch.setattr(
        "sys.stdin.isatty", lambda: False
    )  # no terminal: questions recorded unanswered
    assert (
        main(
            [
                "run",
                "--model",
                "fake",
                "--clarify",
                "--max-questions",
                "1",
                "--rounds",
                "1",
                "--quiet",
                "--db",
                str(tmp_path / "d.sqlite"),
                "--output",
                str(out),
                "p",
            ]
        )
        == 0
    )
    asked = [
        t["content"].count("Q: ")
        for t in json.loads(out.read_text())["transcript"]
        if t["kind"] == "clarification"
    ]
    assert asked == [1, 1, 1]
