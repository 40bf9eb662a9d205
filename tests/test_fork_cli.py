"""``debate fork`` through the real entry point against a loopback server that records every request.

A fork keeps the original's turns up to the end of the round byte for byte, never asks a model for them again,
leaves the original's checkpoints as they were, and goes on with the fork's own models.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine.graph.builder import compile_debate
from tests.support.debate_cli import cli_env, in_process
from tests.support.openai_server import OpenAIServer


def stored(db: Path, thread: str) -> dict[str, Any]:
    """Return a thread's checkpoint rows and its state, read as another process sees them."""
    with sqlite3.connect(db, check_same_thread=False) as conn:
        count = conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone()[0]
        values = compile_debate(checkpointer=SqliteSaver(conn)).get_state(
            {"configurable": {"thread_id": thread}}
        )
    return {"checkpoints": count, "values": dict(values.values)}


def chat_models(server: OpenAIServer) -> list[str]:
    """Return the model each chat request named, in order."""
    return [
        r["body"]["model"]
        for r in server.requests
        if r["path"].split("?")[0].endswith("/chat/completions")
    ]


def run_and_fork(folder: Path, run: list[str], fork: list[str]) -> dict[str, Any]:
    """Run ``run`` on ``openai:model-a`` as thread ``o``, then ``debate fork o FORK`` as thread ``f``."""
    db = folder / "d.sqlite"
    with OpenAIServer(words=30) as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url)
        done = in_process(
            "run",
            "--model",
            "openai:model-a",
            *run,
            "--thread-id",
            "o",
            "--db",
            str(db),
            "--quiet",
            "p",
            env=env,
        )
        assert done.returncode == 0, done.stderr
        original_requests = len(chat_models(server))
        before = stored(db, "o")
        server.requests.clear()
        forked = in_process("fork", "o", *fork, "--thread-id", "f", "--db", str(db), env=env)
        assert forked.returncode == 0, forked.stderr
        models = chat_models(server)
    return {
        "before": before,
        "after": stored(db, "o"),
        "fork": stored(db, "f"),
        "models": models,
        "original_requests": original_requests,
        "err": forked.stderr,
        "db": db,
    }


def kept(run: dict[str, Any], last: int) -> list[str]:
    """Return the original's turns up to the end of round ``last``, and the fork's turns at the same places, as JSON."""
    original = [t for t in run["before"]["values"]["transcript"] if t["round"] <= last]
    fork = run["fork"]["values"]["transcript"][: len(original)]
    assert original, "the original has no turns to keep"
    return [json.dumps(t, sort_keys=True) for t in original] + [
        json.dumps(t, sort_keys=True) for t in fork
    ]


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Return a 3-agent debate of 4 rounds forked at round 2 with another model and another judge."""
    return run_and_fork(
        tmp_path_factory.mktemp("phases"),
        ["--agents", "architect,security,kiss", "--rounds", "4", "--max-concurrency", "1"],
        ["--round", "2", "--model", "openai:model-b", "--judge-model", "openai:model-c"],
    )


@pytest.fixture(scope="module")
def roundtable(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Return a 3-agent roundtable of 110 turns forked at turn 100 with another model."""
    return run_and_fork(
        tmp_path_factory.mktemp("roundtable"),
        ["--protocol", "roundtable", "--turns", "110", "--agents", "architect,security,kiss"],
        ["--round", "100", "--model", "openai:model-b"],
    )


@pytest.mark.parametrize("which,last", [("phases", 2), ("roundtable", 100)])
def test_the_kept_turns_are_byte_identical_and_the_original_is_untouched(
    which: str, last: int, request: pytest.FixtureRequest
) -> None:
    run = request.getfixturevalue(which)
    turns = kept(run, last)
    half = len(turns) // 2
    assert turns[:half] == turns[half:]
    fork = run["fork"]["values"]["transcript"]
    assert fork[half]["round"] == last + 1 and fork[half]["model"] == "openai:model-b"
    assert run["after"]["checkpoints"] == run["before"]["checkpoints"]
    assert json.dumps(run["after"]["values"]["transcript"]) == json.dumps(
        run["before"]["values"]["transcript"]
    )
    assert (
        run["fork"]["values"]["forked_from"]["thread"] == "o"
        and run["fork"]["values"]["forked_from"]["round"] == last
    )


@pytest.mark.parametrize("which", ["phases", "roundtable"])
def test_no_call_of_the_kept_rounds_is_sent_again(
    which: str, request: pytest.FixtureRequest
) -> None:
    run = request.getfixturevalue(which)
    assert "openai:model-a" not in {f"openai:{m}" for m in run["models"]}, (
        "the original's model was asked again"
    )
    own = run["fork"]["values"]["spend"]["total"]["calls"]
    kept = run["fork"]["values"]["forked_from"]["spent"]["calls"]
    original = run["before"]["values"]["spend"]["total"]["calls"]
    assert original == run["original_requests"]  # the spend counts what the server saw
    assert own == len(run["models"])  # the fork's spend is its own calls, each sent once
    assert (
        0 < kept < original
    )  # the kept rounds' calls are the original's, counted apart and not sent again


def test_the_fork_runs_on_its_own_settings(phases: dict[str, Any]) -> None:
    settings = phases["fork"]["values"]["settings"]
    assert {a["model"] for a in settings["agents"]} == {"openai:model-b"}
    assert settings["judge"]["model"] == "openai:model-c"
    assert set(phases["models"]) == {"model-b", "model-c"}
    assert phases["fork"]["values"]["transcript"][-1]["model"] == "openai:model-c"  # the synthesis
    assert phases["before"]["values"]["settings"]["judge"]["model"] == "openai:model-a"
    assert (
        "fork f of o at round 2: model=openai:model-b judge-model=openai:model-c" in phases["err"]
    )


def test_the_kept_rounds_are_stored_once(phases: dict[str, Any]) -> None:
    """The fork's first checkpoint holds rounds 1-2; no later checkpoint or write repeats them (turn ids are unique
    in a debate, so each kept turn's id is found in exactly one stored blob)."""
    with sqlite3.connect(phases["db"]) as conn:
        blobs = [
            bytes(r[0])
            for r in conn.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = 'f'")
        ]
        blobs += [
            bytes(r[0])
            for r in conn.execute("SELECT value FROM writes WHERE thread_id = 'f'")
            if r[0]
        ]
    kept_ids = [
        t["id"].encode() for t in phases["before"]["values"]["transcript"] if t["round"] <= 2
    ]
    assert (
        len(kept_ids) == 21
    )  # round 1: 3 proposals, 6 critiques, 3 refinements; round 2: 6 critiques, 3 refinements
    assert [sum(i in b for b in blobs) for i in kept_ids] == [1] * len(kept_ids)


def test_list_shows_the_fork_and_its_origin(phases: dict[str, Any]) -> None:
    listed = in_process("list", "--db", str(phases["db"]), "--json")
    rows = {row["thread"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert rows["f"]["forked_from"]["thread"] == "o" and rows["f"]["forked_from"]["round"] == 2
    assert (
        rows["o"]["forked_from"] is None
        and rows["f"]["rounds"] == 4
        and rows["f"]["status"] == "done"
    )
    table = in_process("list", "--db", str(phases["db"])).stdout.splitlines()
    assert table[0].split("\t")[-1] == "forked from"
    assert {line.split("\t")[0]: line.split("\t")[-1] for line in table[1:]} == {
        "f": "o@r2",
        "o": "-",
    }
