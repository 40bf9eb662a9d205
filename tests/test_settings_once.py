"""A run's settings are resolved once, where the run starts, and read from state ever after."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
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


def _stored(db: Path, thread: str) -> dict[str, Any]:
    with sqlite3.connect(db, check_same_thread=False) as conn:
        return (
            compile_debate(checkpointer=SqliteSaver(conn))
            .get_state({"configurable": {"thread_id": thread}})
            .values
        )


@pytest.mark.parametrize("seeds", [1, 3])
def test_a_comparison_resolves_once_per_protocol_whatever_its_runs(
    seeds: int, tmp_path: Path, resolutions: list[Any]
) -> None:
    """The flags once where the comparison starts, then each protocol's runs once: never once a run."""
    args = ["compare", "builtin:arithmetic:2", "--model", "fake:solve=0.7", "--seeds", str(seeds)]
    protocols = ["--protocols", "single,vote,debate", "--votes", "3", "--rounds", "1"]
    db = tmp_path / "c.sqlite"
    assert main([*args, *protocols, "--db", str(db), "--quiet"]) == 0
    # the flags (which the debate protocol's runs share), then single's and vote's own agent
    assert len(resolutions) == 3
    values = _stored(db, next(t for t in _threads(db) if ":debate:" in t))
    assert values["solution"] and values["settings"]["rounds"] == 1


def _threads(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]


def test_a_probe_resolves_its_settings_once_with_the_facts_planted(
    tmp_path: Path, resolutions: list[Any]
) -> None:
    db = tmp_path / "p.sqlite"
    args = ["probe", "--model", "fake", "--agents", "kiss,security", "--rounds", "2"]
    assert (
        main([*args, "--facts", "2", "--plant-rounds", "1", "--db", str(db), "--thread-id", "p"])
        == 0
    )
    assert len(resolutions) == 1
    assert _stored(db, "p")["settings"]["briefings"]  # the facts were in the settings resolved


def test_a_fork_resolves_its_changed_settings_once(tmp_path: Path, resolutions: list[Any]) -> None:
    db = tmp_path / "f.sqlite"
    run = ["run", "--model", "fake", "--agents", "kiss,security", "--rounds", "2", "--quiet"]
    assert main([*run, "--db", str(db), "--thread-id", "o", "Design a cache"]) == 0
    fork = ["fork", "o", "--round", "1", "--rounds", "3", "--thread-id", "f", "--quiet"]
    assert main([*fork, "--db", str(db)]) == 0
    assert len(resolutions) == 2  # the run's, then the fork's
    assert _stored(db, "f")["settings"]["rounds"] == 3


def test_a_queued_line_is_resolved_once_and_its_worker_resolves_nothing(
    tmp_path: Path, resolutions: list[Any]
) -> None:
    """``debate submit`` resolves each line where it is submitted; the worker starts on those settings."""
    import asyncio

    from debate_engine.app.cli.problem_lines import parse_problems
    from debate_engine.app.store.queue import drive_thread
    from debate_engine.graph.roundtable import compile_roundtable
    from debate_engine.graph.sample import compile_sample

    lines = '{"problem": "Design a cache", "rounds": 1}\n{"problem": "Pick a queue", "agents": "kiss"}\n'
    entries = parse_problems(lines, {"model": "fake", "agents": "kiss,security"}, tmp_path)
    assert len(resolutions) == 2 and [e.settings["rounds"] for e in entries] == [1, 3]
    saver = InMemorySaver()
    graphs = {
        "phases": compile_debate(checkpointer=saver),
        "roundtable": compile_roundtable(checkpointer=saver),
        "sample": compile_sample(checkpointer=saver),
    }
    for entry in entries:
        values = asyncio.run(
            drive_thread(
                graphs, entry.thread_id, entry.problem, entry.context, "w", settings=entry.settings
            )
        )
        assert values["solution"] and values["settings"] == entry.settings
    assert len(resolutions) == 2


def test_a_debate_started_from_the_viewer_resolves_once(
    tmp_path: Path, resolutions: list[Any]
) -> None:
    import re
    import time

    from starlette.testclient import TestClient

    from debate_engine.app.viewer import create_app

    with TestClient(create_app(str(tmp_path / "v.sqlite"))) as client:
        token = re.search(r'name="csrf" value="([^"]+)"', client.get("/new").text)
        assert token
        form = {"csrf": token[1], "model": "fake", "rounds": "1", "agents": "kiss,testing"}
        sent = client.post("/new", data={**form, "problem": "Pick a queue", "thread_id": "v"})
        assert sent.status_code in (200, 303)
        deadline = time.monotonic() + 60
        while client.get("/debates/v/state").json().get("status") != "done":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert len(resolutions) == 1


def test_a_sample_stopped_before_its_setup_resumes_on_the_sample_graph() -> None:
    """compare's single and vote runs are marked ``sample`` from their first checkpoint, settings included, so a
    run killed between ``begin`` and setup is resumed (by compare, a worker or the viewer) as a sample."""
    import asyncio

    from debate_engine.config.settled import settle
    from debate_engine.graph.by_protocol import protocol_of
    from debate_engine.graph.sample import compile_sample
    from debate_engine.nodes.setup import begin

    saver, config = InMemorySaver(), {"configurable": {"thread_id": "s"}}
    sample = compile_sample(checkpointer=saver)
    settled = settle(Context(model="fake", agents="generalist"))
    asyncio.run(begin(sample, config, settled.intake("What is 2+3?", protocol="sample", samples=3)))
    stored = sample.get_state(config).values
    assert protocol_of(stored) == "sample" and "phase" not in stored  # stopped before setup
    values = sample.invoke(None, config)
    assert len(values["settings"]["agents"]) == 3 and values["solution"]


def test_a_form_sent_twice_never_starts_a_debate_over_the_first(tmp_path: Path) -> None:
    """The viewer's run checks the thread under its lock: a second start on a thread that holds a debate fails."""
    import asyncio

    from debate_engine.app.viewer.running import Runs
    from debate_engine.config.settled import settle

    db = tmp_path / "d.sqlite"
    assert main(["run", "--model", "fake", "--rounds", "1", "--db", str(db), "--thread-id", "x",
                 "--quiet", "Design a cache"]) == 0  # fmt: skip
    before = _stored(db, "x")["transcript"]
    settled = settle(Context(model="fake", rounds=1))

    async def again() -> str:
        runs = Runs(str(db))
        runs.start("x", settled.intake("Pick a queue"), settled.context, None)
        await asyncio.gather(runs.tasks["x"], return_exceptions=True)
        return runs.failed["x"]

    assert "already holds a debate" in asyncio.run(again())
    assert _stored(db, "x")["transcript"] == before


def test_settle_checks_every_models_key_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing key is found where the run starts (a dry run needs none); a person's seat has no model."""
    from debate_engine.config.settled import settle
    from debate_engine.providers.factory import ModelConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    keyed = Context(model="openai:gpt-4o-mini", agents="kiss,security")
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        settle(keyed)
    assert settle(keyed, credentials=False).settings["agents"][0]["model"] == "openai:gpt-4o-mini"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-settle")
    seated = settle(Context(model="openai:gpt-4o-mini", agents="kiss", humans="alice"))
    assert seated.people == ["human:alice"]


def test_the_context_begin_writes_is_the_runs_whole_so_a_fork_keeps_what_it_does_not_change(
    tmp_path: Path,
) -> None:
    """A fork re-resolves the original's stored context with its changes: every setting it does not change
    (the agents, the rounds) is the original's."""
    db = tmp_path / "f.sqlite"
    run = ["run", "--model", "fake", "--agents", "kiss,security", "--rounds", "2", "--quiet"]
    assert main([*run, "--db", str(db), "--thread-id", "o", "Design a cache"]) == 0
    assert _stored(db, "o")["context"]["agents"] == "kiss,security"
    fork = ["fork", "o", "--round", "1", "--model", "fake:words=7", "--thread-id", "f", "--quiet"]
    assert main([*fork, "--db", str(db)]) == 0
    settings = _stored(db, "f")["settings"]
    assert [a["id"] for a in settings["agents"]] == ["kiss", "security"]
    assert settings["rounds"] == 2 and settings["agents"][0]["model"] == "fake:words=7"
