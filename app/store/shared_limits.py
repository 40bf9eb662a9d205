"""The rate limits' buckets where the debates live: one budget for every process and worker sharing a database.

The road takes each request from its model's buckets (``calls.limits``); by default they live in the process.
A ``debate run`` or ``resume`` keeps them with the database its ``--db`` (or ``DEBATE_DB``) names, and so does
every ``debate worker`` for the whole time it runs: in SQLite beside the debates' file (:class:`SqliteBuckets`),
in PostgreSQL in the debates' own database (``app.store.postgres_limits``). Every process on that database then
draws on one budget, waits out a 429 any of them met, and records its waits where ``debate list`` reads them
(:func:`waits_in`). Each take is one short ``BEGIN IMMEDIATE`` transaction (a row per bucket: its level and the
time it is counted at), so the processes are served in the order they came and nobody holds a lock while
waiting. Nothing is reserved that could leak: a level drains by itself as the bucket refills, so a process
killed between its take and its settlement costs the others at most one period of what it took.

The tables live in a SQLite file of their own next to the database (``debates.sqlite`` ->
``debates.limits.sqlite``): a few commits a second from each process in the checkpoints' own file made a
checkpoint write fail now and then with "database is locked" (measured: 3 processes in about 40, three at a
time; none in 42 with no limiter). Its rows are the limiter's alone.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from debate_engine.app.store.database import is_postgres, sqlite_file
from debate_engine.calls.buckets import Level, Store, Take, Wait, adjusted, floored, plan
from debate_engine.calls.limits import declare, limits_of, sharing

TABLES = (
    "CREATE TABLE IF NOT EXISTS rate_buckets (name TEXT PRIMARY KEY, level REAL NOT NULL, at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS rate_pauses (name TEXT PRIMARY KEY, until REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS rate_waits (run TEXT PRIMARY KEY, model TEXT NOT NULL, until REAL NOT NULL)",
)
UPSERT = (
    "INSERT INTO rate_buckets (name, level, at) VALUES (?, ?, ?) "
    "ON CONFLICT(name) DO UPDATE SET level = excluded.level, at = excluded.at"
)
BUSY_MS = 30_000
"""How long a take waits for another process's transaction (each lasts a few milliseconds)."""


class SqliteBuckets:
    """Buckets and pauses in a SQLite file that every process drawing on the same models opens."""

    blocking = True

    def __init__(self, path: str, clock: Callable[[], float] = time.time) -> None:
        self.path, self.clock = path, clock
        # One connection, kept: it is asked a few times a second.
        self._conn = sqlite3.connect(
            path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False
        )
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        self._lock = threading.Lock()
        with self._lock:
            for table in TABLES:
                self._conn.execute(table)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the database's write lock (and this process's) for one take; roll back on any error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def reserve(
        self, takes: Sequence[Take], pause: str, most_wait_s: float, now: float
    ) -> tuple[float, bool]:
        """Return when the request may be sent, and whether it was taken (within ``most_wait_s``).

        It is counted from when it asked (``now``): a wait for another process's write lock is part of it, so a
        request whose deadline passed meanwhile is not taken; its turn comes after the takes that held the lock.
        """
        if not takes:  # only the pause to read: no write lock
            with self._lock:
                paused = _paused_until(self._conn, pause)
            send = plan({}, (), paused, max(now, self.clock()))[0]
            return send, send - now <= most_wait_s
        with self._transaction() as conn:
            held_at = max(now, self.clock())
            send, after = plan(_levels(conn, takes), takes, _paused_until(conn, pause), held_at)
            taken = send - now <= most_wait_s
            if taken:
                conn.executemany(UPSERT, [(n, level, at) for n, (level, at) in after.items()])
        return send, taken

    def adjust(self, changes: Sequence[Take], now: float) -> None:
        """Add each change to its bucket (negative: give back)."""
        with self._transaction() as conn:
            after = adjusted(_levels(conn, changes), changes, max(now, self.clock()))
            conn.executemany(UPSERT, [(n, level, at) for n, (level, at) in after.items()])

    def pause(self, name: str, until: float) -> None:
        """Send nothing on ``name`` before ``until`` (a later pause already set stays)."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO rate_pauses (name, until) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET until = MAX(until, excluded.until)",
                (name, until),
            )

    def floor(self, floors: Sequence[Take], now: float) -> None:
        """Raise each bucket to at least its floor at ``now`` (what the provider said it counts)."""
        with self._transaction() as conn:
            after = floored(_levels(conn, floors), floors, max(now, self.clock()))
            conn.executemany(UPSERT, [(n, level, at) for n, (level, at) in after.items()])

    def note_wait(self, run: str, model: str, until: float) -> None:
        """Record that a request of ``run`` waits for ``model`` until ``until``."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO rate_waits (run, model, until) VALUES (?, ?, ?) "
                "ON CONFLICT(run) DO UPDATE SET model = excluded.model, until = excluded.until",
                (run, model, until),
            )

    def waits(self) -> dict[str, Wait]:
        """Return each run's wait that has not ended yet."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT run, model, until FROM rate_waits WHERE until > ?", (self.clock(),)
            ).fetchall()
        return {run: (model, until) for run, model, until in rows}


def _levels(conn: sqlite3.Connection, takes: Sequence[Take]) -> dict[str, Level]:
    names = sorted({bucket.name for bucket, _ in takes})
    marks = ",".join("?" * len(names))
    rows = conn.execute(
        f"SELECT name, level, at FROM rate_buckets WHERE name IN ({marks})", names
    ).fetchall()
    return {name: (level, at) for name, level, at in rows}


def _paused_until(conn: sqlite3.Connection, name: str) -> float:
    row = conn.execute("SELECT until FROM rate_pauses WHERE name = ?", (name,)).fetchone()
    return float(row[0]) if row else 0.0


def limits_file(db: Path) -> Path:
    """Return the file the rate limits of the debates in ``db`` share: beside it, named after it."""
    return db.with_name(f"{db.stem}.limits{db.suffix or '.sqlite'}")


@asynccontextmanager
async def shared_limits(db: str, thread: str, settings: Any) -> AsyncIterator[None]:
    """Hold the run on ``thread`` to the rate limits its settings fix, their buckets in the database ``db``
    while it runs (:func:`shared_store`), so that every process running debates there shares them."""
    declare(thread, limits_of(settings))
    async with shared_store(db):
        yield


@asynccontextmanager
async def shared_store(db: str) -> AsyncIterator[Store]:
    """Keep this process's buckets, pauses and waits with the database ``db`` while the block runs (one run's
    process, or a worker's for as long as it runs), then as before.

    Whether or not a run states a limit: a 429 it meets pauses the model for every process, and its waits show
    in ``debate list``.
    """
    store = await asyncio.to_thread(open_store, db)
    try:
        with sharing(store):
            yield store
    finally:
        await asyncio.to_thread(store.close)


def open_store(db: str) -> Store:
    """Return the store every process on ``db`` shares: its PostgreSQL database, or a SQLite file beside it."""
    if is_postgres(db):
        from debate_engine.app.store.postgres_limits import (  # start-up: psycopg, the postgres extra
            PostgresBuckets,
        )

        return PostgresBuckets(db)
    return SqliteBuckets(str(limits_file(sqlite_file(db))))


def waits_in(db: str) -> dict[str, tuple[str, float]]:
    """Return, by run, the model each run on ``db`` waits for and the seconds left: what the store records,
    read without creating it (nothing when no run there ever shared it)."""
    if is_postgres(db):
        from debate_engine.app.store.postgres_limits import (  # start-up: psycopg, the postgres extra
            waits_in_postgres,
        )

        return waits_in_postgres(db)
    path = limits_file(sqlite_file(db))
    if not path.exists():
        return {}
    store = SqliteBuckets(str(path))
    try:
        found = store.waits()
    finally:
        store.close()
    now = time.time()
    return {run: (model, until - now) for run, (model, until) in found.items()}
