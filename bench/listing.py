"""``debate list`` on a small database against one that holds a long debate.

Small: five short debates. Large: the long debate of the storage section
plus four short ones. Both are timed through
``debate_engine.app.cli.list.rows_of`` (what ``debate list`` prints) with
``asyncio.run``, the median of several runs. For contrast, the same two
threads' full state is loaded as ``debate show`` does (``aget_state``),
which must read the whole debate.
"""

from __future__ import annotations

import asyncio
import importlib
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from statistics import median
from typing import Any

from bench.common import TWO, Run, Runs, db_bytes, debate, kb, rounds_for, table, x
from debate_engine.app.store.database import open_checkpointer, status_of
from debate_engine.graph.builder import compile_debate

REPEATS = 21


def list_rows() -> Callable[[str], Awaitable[list[tuple[str, ...]]]]:
    """Return what ``debate list`` prints: ``commands.list.rows_of`` (``commands._rows`` before the CLI split)."""
    try:
        from debate_engine.app.cli.list import rows_of

        return rows_of
    except ImportError:
        module: Any = importlib.import_module("debate_engine.app.cli")
        return module._rows  # type: ignore[no-any-return]


def copy_db(source: Path, target: Path) -> None:
    """Make a consistent copy of a SQLite database through the backup API."""
    src, dst = sqlite3.connect(str(source)), sqlite3.connect(str(target))
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def add_short(path: Path, count: int) -> None:
    for i in range(count):
        debate(path, agents=TWO, rounds=2, thread=f"short-{i}")


def timed(
    small: Callable[[], Awaitable[Any]], large: Callable[[], Awaitable[Any]], repeats: int = REPEATS
) -> list[tuple[float, Any]]:
    """Median seconds of ``repeats`` fresh ``asyncio.run`` calls of each, interleaved, and the last results."""
    times: list[list[float]] = [[], []]
    results: list[Any] = [None, None]
    for _ in range(repeats):
        for i, make in enumerate((small, large)):
            began = time.perf_counter()
            results[i] = asyncio.run(make())  # type: ignore[arg-type]
            times[i].append(time.perf_counter() - began)
    return [(median(times[i]), results[i]) for i in (0, 1)]


async def status_loop(db: str, thread: str) -> float:
    """Median seconds of reading one thread's status record, the connection already open."""
    async with open_checkpointer(db) as saver:
        times = []
        for _ in range(REPEATS):
            began = time.perf_counter()
            await status_of(saver, thread)
            times.append(time.perf_counter() - began)
    return median(times)


async def load_state(db: str, thread: str) -> int:
    async with open_checkpointer(db) as saver:
        snapshot = await compile_debate(checkpointer=saver).aget_state(
            {"configurable": {"thread_id": thread}}
        )
    return len(snapshot.values.get("transcript", []))


def databases(runs: Runs, turns: int) -> tuple[Path, Path, Run]:
    """Five short debates; the long debate plus four short ones."""
    long = runs.get(TWO, rounds_for(turns))
    small, large = runs.folder / "list-small.sqlite", runs.folder / "list-large.sqlite"
    for path in (small, large):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    add_short(small, 5)
    copy_db(long.path, large)
    add_short(large, 4)
    return small, large, long


def bench_listing(runs: Runs, turns: int) -> None:
    small, large, long = databases(runs, turns)
    _rows = list_rows()
    (t_small, rows_small), (t_large, rows_large) = timed(
        lambda: _rows(str(small)), lambda: _rows(str(large))
    )
    (_, u_small), (_, u_large) = timed(
        lambda: status_loop(str(small), "short-0"),
        lambda: status_loop(str(large), long.thread),
        repeats=1,
    )
    (s_small, n_small), (s_large, n_large) = timed(
        lambda: load_state(str(small), "short-0"),
        lambda: load_state(str(large), long.thread),
        repeats=3,
    )
    print(
        f"Small: 5 debates of 2 rounds. Large: a {long.turns:,}-turn debate + 4 of 2 rounds. "
        f"Medians of {REPEATS} interleaved runs (state loads: 3).\n"
    )
    table(
        ["operation", "small DB", "large DB", "large / small"],
        [
            [
                "database size (KB)",
                kb(db_bytes(small)),
                kb(db_bytes(large)),
                x(db_bytes(large) / db_bytes(small)),
            ],
            ["threads listed", len(rows_small), len(rows_large), ""],
            [
                "`debate list` (rows_of, opens the DB) ms",
                f"{t_small * 1000:.1f}",
                f"{t_large * 1000:.1f}",
                x(t_large / t_small),
            ],
            [
                f"status_of one thread, DB open: {n_small} vs {n_large:,} turns, ms",
                f"{u_small * 1000:.2f}",
                f"{u_large * 1000:.2f}",
                x(u_large / u_small),
            ],
            [
                "full state load (aget_state, as `debate show`) ms",
                f"{s_small * 1000:.1f}",
                f"{s_large * 1000:.1f}",
                x(s_large / s_small),
            ],
        ],
    )
    print(f"`debate list` large / small: {x(t_large / t_small)} (goal about 1x).\n")
