"""What every benchmark shares: a debate run on SQLite, byte counts, tables and timers.

Every figure a benchmark prints is a ratio against a baseline measured in the
same process (raw transcript bytes, one call's latency, the early rounds of
the same debate, a small database); nothing asserts on time.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["DEBATE_MODEL"] = "fake"  # never a real provider, whatever the environment holds

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from debate_engine import Context, compile_debate  # noqa: E402

PROBLEM = "Design a rate limiter for api_gateway.py at 1000 rps."
TWO = "architect,performance"
THREE = "architect,performance,security"
FOUR = "architect,performance,security,testing"


@dataclass
class Run:
    """One finished debate kept in its own SQLite file."""

    path: Path
    thread: str
    agents: int
    rounds: int
    seconds: float
    values: dict[str, Any]
    starts: list[tuple[float, str, int]] = field(default_factory=list)
    """``(perf_counter, phase, round)`` of every ``phase_started`` event, in order."""

    @property
    def turns(self) -> int:
        return len(self.values["transcript"])

    @property
    def raw(self) -> int:
        return raw_bytes(self.values["transcript"])


def raw_bytes(transcript: Sequence[dict[str, Any]]) -> int:
    """Return the text the debaters wrote: UTF-8 bytes of every turn's content."""
    return sum(len(turn["content"].encode()) for turn in transcript)


def db_bytes(path: Path) -> int:
    """Return the database on disk after its connection closed: main file plus any ``-wal``."""
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


@contextmanager
def sqlite_saver(path: Path) -> Iterator[SqliteSaver]:
    """Yield a sync ``SqliteSaver`` on its own connection, closed (and the WAL folded back) on exit."""
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def debate(
    path: Path, *, agents: str, rounds: int, thread: str, model: str = "fake:words=150"
) -> Run:
    """Run one debate to the end on SQLite, recording when each phase started."""
    context = Context(model=model, agents=agents, rounds=rounds, context_window=8192)
    config: Any = {"configurable": {"thread_id": thread}}
    starts: list[tuple[float, str, int]] = []
    with sqlite_saver(path) as saver:
        graph = compile_debate(checkpointer=saver)
        began = time.perf_counter()
        for event in graph.stream(
            {"problem": PROBLEM}, config, context=context, stream_mode="custom"
        ):
            if isinstance(event, dict) and event.get("event") == "phase_started":
                starts.append((time.perf_counter(), event["phase"], event["round"]))
        seconds = time.perf_counter() - began
        values = dict(graph.get_state(config).values)
    count = len(agents.split(","))
    return Run(path, thread, count, rounds, seconds, values, starts)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a Markdown table."""
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print()


def x(value: float) -> str:
    """Return a ratio as ``1.23x``."""
    return f"{value:.2f}x"


def kb(n: float) -> str:
    return f"{n / 1024:,.0f}"


@contextmanager
def section(title: str, walls: list[tuple[str, float]]) -> Iterator[None]:
    """Print a section heading and record its wall time."""
    print(f"## {title}\n", flush=True)
    began = time.perf_counter()
    try:
        yield
    finally:
        took = time.perf_counter() - began
        walls.append((title, took))
        print(f"(section wall time {took:.1f} s)\n", flush=True)


class Runs:
    """Debates run once per process and shared by the sections that read them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._done: dict[tuple[str, int], Run] = {}

    def get(self, agents: str, rounds: int) -> Run:
        key = (agents, rounds)
        if key not in self._done:
            name = f"{len(agents.split(','))}x{rounds}"
            print(f"(running {name}: {agents}, {rounds} rounds ...)", flush=True)
            self._done[key] = debate(
                self.folder / f"{name}.sqlite", agents=agents, rounds=rounds, thread=f"long-{name}"
            )
        return self._done[key]


def rounds_for(turns: int) -> int:
    """Return the rounds that give about ``turns`` turns with two agents (four turns a round)."""
    return max(2, turns // 4)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for the block only (point the engine at a loopback server), then put them back."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
