"""Storage of a fork: the bytes a fork adds to SQLite, against the original's bytes up to round K plus the new rounds.

The goal (issue 22) is at most 1.0x: the fork's first checkpoint holds rounds
1..K once, and its later checkpoints only their own steps. A fork that copied
the whole history into every checkpoint would grow with the square of its
length; the last row shows what that would have cost here.
"""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

from bench.common import TWO, db_bytes, debate, kb, raw_bytes, sqlite_saver, table, x
from debate_engine import compile_debate
from debate_engine.app.cli.main import main as debate_cli

ROW_BYTES = """
SELECT COALESCE((SELECT SUM(LENGTH(checkpoint) + LENGTH(metadata)) FROM checkpoints
                 WHERE thread_id = :t AND checkpoint_id <= :upto), 0)
     + COALESCE((SELECT SUM(LENGTH(value)) FROM writes WHERE thread_id = :t AND checkpoint_id <= :upto), 0)
"""
LAST = "~"
"""Greater than every checkpoint id (uuid6, hex and dashes): ``upto=LAST`` counts a whole thread."""


def thread_bytes(path: Path, thread: str, upto: str = LAST) -> int:
    """Return the stored bytes of ``thread`` (checkpoints and writes) up to the checkpoint ``upto``, inclusive."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute(ROW_BYTES, {"t": thread, "upto": upto}).fetchone()[0])


def first_checkpoint(path: Path, thread: str) -> tuple[str, int]:
    """Return the id of ``thread``'s first checkpoint and how many it has."""
    with sqlite3.connect(path) as conn:
        first, count = conn.execute(
            "SELECT MIN(checkpoint_id), COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone()
    return str(first), int(count)


def bench_fork(folder: Path, rounds: int, at: int) -> None:
    """Run a 2-agent debate of ``rounds`` rounds, fork it at round ``at`` through the CLI, and weigh the bytes."""
    path = folder / "fork.sqlite"
    original = debate(path, agents=TWO, rounds=rounds, thread="original")
    before = db_bytes(path)
    with contextlib.redirect_stdout(
        io.StringIO()
    ):  # the fork's solution; the bench prints figures only
        code = debate_cli(
            [
                "fork",
                "original",
                "--round",
                str(at),
                "--model",
                "fake:words=120",
                "--thread-id",
                "fork",
                "--db",
                str(path),
                "--quiet",
            ]
        )
    assert code == 0, f"debate fork exited {code}"
    grown = db_bytes(path) - before
    with sqlite_saver(path) as saver:  # the fork names the checkpoint it was copied from
        point = (
            compile_debate(checkpointer=saver)
            .get_state({"configurable": {"thread_id": "fork"}})
            .values["forked_from"]["checkpoint"]
        )
    first, checkpoints = first_checkpoint(path, "fork")
    kept = thread_bytes(
        path, "original", point
    )  # the original up to the fork point (its last checkpoint before)
    copy, whole = thread_bytes(path, "fork", first), thread_bytes(path, "fork")
    new = whole - copy
    kept_text = raw_bytes([t for t in original.values["transcript"] if t["round"] <= at])
    table(
        ["figure", "bytes (KB)", "ratio"],
        [
            [f"original: 2 agents x {rounds} rounds, all", kb(thread_bytes(path, "original")), ""],
            [f"original up to round {at} (baseline A)", kb(kept), ""],
            [f"fork: its new rounds {at + 1}-{rounds} and the synthesis (baseline B)", kb(new), ""],
            [
                "fork: its first checkpoint, rounds 1-K copied",
                kb(copy),
                f"{x(copy / kept)} of A, {x(copy / kept_text)} of their text",
            ],
            ["**fork in all / (A + B)**", kb(whole), x(whole / (kept + new))],
            ["database file growth by the fork / (A + B)", kb(grown), x(grown / (kept + new))],
            [
                f"a copy of rounds 1-K in each of the fork's {checkpoints} checkpoints / (A + B)",
                kb(copy * checkpoints + new),
                x((copy * checkpoints + new) / (kept + new)),
            ],
        ],
    )
