"""A debate database for the viewer's tests: real debates on the fake model, made through the CLI in-process."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine import RoundtableContext, compile_roundtable
from debate_engine.app.cli.main import main

SCRIPT = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
"""Model-borne text that would run if any page failed to escape it."""
PROBLEM = f"What is 12+34? {SCRIPT}"
TEAM = "architect,kiss,testing"
ORIGINAL = (
    "run",
    "--model",
    "fake:solve=0",
    "--agents",
    TEAM,
    "--rounds",
    "3",
    "--thread-id",
    "phases-1",
)
FLIPPING = ("--model", "fake:solve=1", "--agents", "performance,security,generalist")
"""A fork's changes that flip the original's verdict."""


def run(db: Path, *argv: str) -> None:
    """Run one ``debate`` command against ``db``; fail loudly when it does not exit 0."""
    code = main([*argv, "--db", str(db), "--quiet"])
    assert code == 0, f"debate {' '.join(argv)} exited {code}"


def three_debates(db: Path) -> dict[str, str]:
    """Return the threads of a phase debate, a roundtable, and a fork of the first from round 2 with other agents.

    The original's agents always answer wrong (47) and keep their answer; the fork's new agents
    always answer right (46), so the fork's verdict flips.
    """
    run(db, *ORIGINAL, PROBLEM)
    run(
        db,
        "run",
        "--model",
        "fake",
        "--protocol",
        "roundtable",
        "--turns",
        "7",
        "--agents",
        "architect,security",
        "--thread-id",
        "table-1",
        "Pick a cache for the session store",
    )
    run(db, "fork", "phases-1", "--round", "2", *FLIPPING, "--thread-id", "phases-1-fork")
    return {"phases": "phases-1", "roundtable": "table-1", "fork": "phases-1-fork"}


def long_roundtable(
    path: Path,
    turns: int,
    *,
    model: str = "fake",
    problem: str = "Pick a session cache",
    batch: int = 500,
    position: Callable[[int], dict[str, Any]] | None = None,
) -> None:
    """Store a roundtable of ``turns`` turns as thread ``rt``: a real 3-turn run, its log extended by
    ``update_state`` (as its last node, so nothing runs again) ``batch`` turns at a time, one checkpoint each, as
    a long run's log grows; ``position(seq)`` gives each added turn the position it states."""
    context = RoundtableContext(model=model, agents="architect,security,kiss", turns=3)
    config: Any = {"configurable": {"thread_id": "rt"}}
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        graph = compile_roundtable(checkpointer=SqliteSaver(conn))
        for _ in graph.stream({"problem": problem}, config, context=context):
            pass
        values = graph.get_state(config).values
        spoken = [t for t in values["transcript"] if t["kind"] == "message"]
        have = len(values["transcript"])
        while have < turns:
            added = []
            for seq in range(have, min(turns, have + batch)):
                model_turn = spoken[seq % len(spoken)]
                turn = {**model_turn, "seq": seq, "round": seq}
                turn["id"] = f"message:t{seq}:{model_turn['speaker']}"
                added.append({**turn, "position": position(seq)} if position else turn)
            have += len(added)
            status = {**values["status"], "turns": have, "round": have, "rounds": turns}
            graph.update_state(
                config,
                {"transcript": added, "status": {**status, "phase": "done"}, "turn_count": have},
                as_node="synthesize",
            )
    finally:
        conn.close()
