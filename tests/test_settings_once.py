"""A run's settings are resolved once, where the run starts, and read from state ever after."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.config import resolve as resolving


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Count every resolution: ``resolve`` checks its context first, through this module global."""
    seen: list[Any] = []
    check = resolving.check_context

    def counted(context: Any) -> Any:
        seen.append(context)
        return check(context)

    monkeypatch.setattr(resolving, "check_context", counted)
    yield seen


@pytest.mark.parametrize(
    "flags",
    [
        ["--rounds", "2"],
        ["--protocol", "roundtable", "--turns", "4"],
        ["--rounds", "1", "--clarify"],
    ],
    ids=["phases", "roundtable", "clarify"],
)
def test_one_debate_run_resolves_its_settings_once(
    flags: list[str], tmp_path: Path, resolutions: list[Any]
) -> None:
    db = tmp_path / "d.sqlite"
    args = ["run", "--model", "fake", "--agents", "kiss,security", *flags, "--quiet"]
    assert main([*args, "--db", str(db), "--thread-id", "t", "Design a cache"]) == 0
    assert len(resolutions) == 1
    with sqlite3.connect(db, check_same_thread=False) as conn:
        values = (
            compile_debate(checkpointer=SqliteSaver(conn))
            .get_state({"configurable": {"thread_id": "t"}})
            .values
        )
    assert [a["id"] for a in values["settings"]["agents"]] == ["kiss", "security"]
    assert values["solution"]


def test_a_resume_reads_the_settings_and_resolves_nothing(
    tmp_path: Path, resolutions: list[Any]
) -> None:
    db, config = tmp_path / "d.sqlite", {"configurable": {"thread_id": "t"}}
    with sqlite3.connect(db, check_same_thread=False) as conn:
        stopped = compile_debate(checkpointer=SqliteSaver(conn), interrupt_before=["critique"])
        stopped.invoke(
            {"problem": "Design a cache"}, config, context=Context(model="fake", rounds=1)
        )
    assert len(resolutions) == 1  # the graph's first node resolved the run's context
    assert main(["resume", "t", "--db", str(db), "--quiet"]) == 0
    assert len(resolutions) == 1


def test_a_graph_run_resolves_once_in_its_first_node(resolutions: list[Any]) -> None:
    """Python and the server: the first node resolves the context; setup and every phase read state."""
    values = compile_debate().invoke(
        {"problem": "Design a cache"},
        {"configurable": {"thread_id": "t"}},
        context=Context(model="fake", rounds=2),
    )
    assert len(resolutions) == 1 and values["settings"]["rounds"] == 2
