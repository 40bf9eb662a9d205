"""Storage: SQLite checkpoint bytes against the raw transcript bytes they keep.

Baseline: the UTF-8 bytes of every turn's content in the finished transcript.
The database is measured after its connection closed (main file plus -wal).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bench.common import THREE, TWO, Run, Runs, db_bytes, kb, rounds_for, table, x

GOAL_SMALL = 10.0
"""3 agents x 10 rounds."""
GOAL_LONG = 20.0
"""2 agents at 10,000 turns."""
SNAPSHOT_BYTES = 100_000
"""A checkpoint blob this large holds a DeltaChannel snapshot of the whole logs (ordinary ones are ~2 KB)."""


def cases(sizes: list[int]) -> list[tuple[str, str, int, float | None]]:
    """(label, agents, rounds, goal) for every storage case."""
    out: list[tuple[str, str, int, float | None]] = [
        ("(a) 3 agents x 10 rounds", THREE, 10, GOAL_SMALL)
    ]
    for turns in sizes:
        goal = GOAL_LONG if turns >= 10_000 else None
        out.append((f"(b) 2 agents, ~{turns:,} turns", TWO, rounds_for(turns), goal))
    return out


def row(label: str, run: Run, goal: float | None) -> list[Any]:
    size = db_bytes(run.path)
    ratio = size / run.raw
    verdict = "" if goal is None else ("met" if ratio <= goal else "MISSED")
    goal_text = "" if goal is None else f"<= {goal:.0f}x {verdict}"
    return [
        label,
        run.rounds,
        run.turns,
        len(run.values["summary_log"]),
        kb(run.raw),
        kb(size),
        x(ratio),
        f"{size / run.turns:,.0f}",
        f"{run.raw / run.turns:,.0f}",
        goal_text,
        f"{run.seconds:.1f}",
    ]


HEADERS = [
    "case",
    "rounds",
    "turns",
    "summaries",
    "raw KB",
    "DB KB",
    "DB / raw",
    "DB bytes/turn",
    "raw bytes/turn",
    "goal",
    "run s",
]


def bench_storage(runs: Runs, sizes: list[int]) -> None:
    """Case (a) and the two-agent series; then where the bytes of the smallest and largest runs are."""
    print("Context window 8192, default summarization, fake:words=150, sync SqliteSaver.\n")
    rows, done = [], []
    for label, agents, rounds, goal in cases(sizes):
        run = runs.get(agents, rounds)
        rows.append(row(label, run, goal))
        done.append((label, run))
    table(HEADERS, rows)
    for label, run in (done[0], done[-1]):
        print(f"Where the bytes are: {label}\n")
        breakdown(run)


def parts(path: Path) -> list[tuple[str, int]]:
    """Payload bytes per table and channel; task results split by the node that ran them."""
    conn = sqlite3.connect(str(path))
    try:
        out = [
            (f"checkpoints.checkpoint, {kind} ({n} rows)", b or 0)
            for kind, n, b in conn.execute(
                f"SELECT CASE WHEN length(checkpoint) >= {SNAPSHOT_BYTES} THEN 'full log snapshots' ELSE 'ordinary' END "
                "AS kind, count(*), sum(length(checkpoint)) FROM checkpoints GROUP BY kind ORDER BY 3 DESC"
            )
        ]
        out += [
            ("checkpoints.metadata", b or 0)
            for (b,) in conn.execute("SELECT sum(length(metadata)) FROM checkpoints")
        ]
        out += [
            (f"writes[{ch}] ({n} rows)", b or 0)
            for ch, n, b in conn.execute(
                "SELECT channel, count(*), sum(length(value)) FROM writes WHERE channel != '__return__' "
                "GROUP BY channel ORDER BY 3 DESC"
            )
        ]
        out += [
            (f"writes[__return__] of {node} tasks ({n} rows)", b or 0)
            for node, n, b in conn.execute(
                "SELECT CASE WHEN task_path LIKE '%summarize%' THEN 'summary_call' ELSE 'model_call' END AS node, "
                "count(*), sum(length(value)) FROM writes WHERE channel = '__return__' GROUP BY node ORDER BY 3 DESC"
            )
        ]
        out += [
            ("writes keys (ids, task paths)", b or 0)
            for (b,) in conn.execute(
                "SELECT sum(length(thread_id) + length(checkpoint_ns) + length(checkpoint_id) + length(task_id) "
                "+ length(task_path) + length(channel) + length(type)) FROM writes"
            )
        ]
    finally:
        conn.close()
    return out


def breakdown(run: Run) -> None:
    size = db_bytes(run.path)
    items = parts(run.path)
    small = [(name, b) for name, b in items if b < size * 0.005]
    items = [(name, b) for name, b in items if b >= size * 0.005]
    items.append((f"{len(small)} smaller items", sum(b for _, b in small)))
    items.append(
        ("indexes, page slack, free pages (rest)", size - sum(b for _, b in parts(run.path)))
    )
    table(
        ["table / channel", "KB", "share of DB", "vs raw transcript"],
        [[name, kb(b), f"{b / size:.1%}", x(b / run.raw)] for name, b in items],
    )
