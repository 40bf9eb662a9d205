"""The rate limits' buckets in the debates' PostgreSQL database: one budget for a whole ``debate worker`` fleet.

Every worker (and every ``debate run`` on the same ``--db``) keeps its buckets, pauses and waits here
(``app.store.shared_limits`` chooses this store for a PostgreSQL URL), so workers on any number of machines draw
on one budget per model and wait out a 429 any of them met. The rows are the SQLite store's, in tables of their
own (``debate_rate_*``), and the arithmetic is the same (``calls.buckets``).

Each take is one short transaction that locks its buckets' rows (``FOR UPDATE``, in name order, so two takes never
wait for each other in a circle); nobody holds a lock while a request waits. Times are the database server's
clock, so that machines whose clocks disagree still share one line; each call turns them into this machine's time.

Nothing leaks from a worker killed at any point: a transaction cut short is rolled back by the server with the
connection, and a level taken but never settled drains by itself as the bucket refills (it is a reservation that
expires), so it costs the others at most what it took, for one period. A pause and a recorded wait end at their
own time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from debate_engine.calls.buckets import Level, Take, Wait, adjusted, floored, plan

TABLES = (
    "CREATE TABLE IF NOT EXISTS debate_rate_buckets "
    "(name text PRIMARY KEY, level double precision NOT NULL, at double precision NOT NULL)",
    "CREATE TABLE IF NOT EXISTS debate_rate_pauses (name text PRIMARY KEY, until double precision NOT NULL)",
    "CREATE TABLE IF NOT EXISTS debate_rate_waits "
    "(run text PRIMARY KEY, model text NOT NULL, until double precision NOT NULL)",
)
TABLES_LOCK = 7_294_003
"""The advisory-lock key under which one process at a time creates the tables (the queue's are 7_294_001-2)."""
UPSERT = (
    "INSERT INTO debate_rate_buckets (name, level, at) VALUES (%s, %s, %s) "
    "ON CONFLICT (name) DO UPDATE SET level = EXCLUDED.level, at = EXCLUDED.at"
)
CLOCK = "extract(epoch FROM clock_timestamp())::double precision"
"""The server's time, in seconds since the epoch."""
LOCK_WAIT = "30s"
"""How long a take waits for another worker's transaction (each lasts a few milliseconds)."""


class PostgresBuckets:
    """Buckets, pauses and waits in the PostgreSQL database every worker drawing on the same models opens."""

    blocking = True

    def __init__(self, db: str, clock: Callable[[], float] | None = None) -> None:
        """Open one connection to ``db``, kept (it is asked a few times a second); ``clock`` stands in for the
        server's and this machine's alike (a test's)."""
        self.db, self.clock = db, clock
        self._lock = threading.Lock()
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.db, autocommit=True, connect_timeout=10)
        conn.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (TABLES_LOCK,))
            for table in TABLES:
                conn.execute(table)
        return conn

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _server_now(self, conn: psycopg.Connection[Any]) -> float:
        if self.clock is not None:
            return self.clock()
        row = conn.execute(f"SELECT {CLOCK}").fetchone()
        assert row is not None
        return float(row[0])

    @contextmanager
    def _transaction(self) -> Iterator[tuple[psycopg.Connection[Any], float]]:
        """Yield the connection in a transaction and how far this machine's clock runs ahead of the server's;
        a connection the server dropped (a restart) is opened again once."""
        with self._lock:
            if self._conn.closed or self._conn.broken:
                self._conn = self._connect()
            with self._conn.transaction():
                ahead = (
                    0.0 if self.clock is not None else time.time() - self._server_now(self._conn)
                )
                yield self._conn, ahead

    def reserve(
        self, takes: Sequence[Take], pause: str, most_wait_s: float, now: float
    ) -> tuple[float, bool]:
        """Return when the request may be sent (this machine's time), and whether it was taken (within
        ``most_wait_s``). The wait is counted from when it asked (``now``): a wait for another worker's lock on
        the rows is part of it, and a request whose deadline passed meanwhile is not taken."""
        with self._transaction() as (conn, ahead):
            levels = _locked_levels(conn, takes)
            asked_at = now - ahead  # on the server's clock
            held_at = max(asked_at, self._server_now(conn))
            send, after = plan(levels, takes, _paused_until(conn, pause), held_at)
            taken = send - asked_at <= most_wait_s
            if taken and after:
                conn.cursor().executemany(UPSERT, [(n, lv, at) for n, (lv, at) in after.items()])
        return send + ahead, taken

    def adjust(self, changes: Sequence[Take], now: float) -> None:
        """Add each change to its bucket (negative: give back)."""
        with self._transaction() as (conn, ahead):
            after = adjusted(_locked_levels(conn, changes), changes, now - ahead)
            conn.cursor().executemany(UPSERT, [(n, lv, at) for n, (lv, at) in after.items()])

    def floor(self, floors: Sequence[Take], now: float) -> None:
        """Raise each bucket to at least its floor at ``now`` (what the provider said it counts)."""
        with self._transaction() as (conn, ahead):
            after = floored(_locked_levels(conn, floors), floors, now - ahead)
            conn.cursor().executemany(UPSERT, [(n, lv, at) for n, (lv, at) in after.items()])

    def pause(self, name: str, until: float) -> None:
        """Send nothing on ``name`` before ``until`` (a later pause already set stays)."""
        with self._transaction() as (conn, ahead):
            conn.execute(
                "INSERT INTO debate_rate_pauses (name, until) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE "
                "SET until = GREATEST(debate_rate_pauses.until, EXCLUDED.until)",
                (name, until - ahead),
            )

    def note_wait(self, run: str, model: str, until: float) -> None:
        """Record that a request of ``run`` waits for ``model`` until ``until``."""
        with self._transaction() as (conn, ahead):
            conn.execute(
                "INSERT INTO debate_rate_waits (run, model, until) VALUES (%s, %s, %s) ON CONFLICT (run) "
                "DO UPDATE SET model = EXCLUDED.model, until = EXCLUDED.until",
                (run, model, until - ahead),
            )

    def waits(self) -> dict[str, Wait]:
        """Return each run's wait that has not ended yet (this machine's time)."""
        with self._transaction() as (conn, ahead):
            rows = conn.execute(
                "SELECT run, model, until FROM debate_rate_waits WHERE until > %s",
                (self._server_now(conn),),
            ).fetchall()
        return {run: (model, until + ahead) for run, model, until in rows}


def _locked_levels(conn: psycopg.Connection[Any], takes: Sequence[Take]) -> dict[str, Level]:
    """Return the levels of the takes' buckets, their rows locked until the transaction ends (made if new)."""
    names = sorted({bucket.name for bucket, _ in takes})
    if not names:
        return {}
    conn.cursor().executemany(
        "INSERT INTO debate_rate_buckets (name, level, at) VALUES (%s, 0, 0) ON CONFLICT (name) DO NOTHING",
        [(n,) for n in names],
    )
    rows = conn.execute(
        "SELECT name, level, at FROM debate_rate_buckets WHERE name = ANY(%s) ORDER BY name FOR UPDATE",
        (names,),
    ).fetchall()
    return {name: (level, at) for name, level, at in rows}


def _paused_until(conn: psycopg.Connection[Any], name: str) -> float:
    row = conn.execute("SELECT until FROM debate_rate_pauses WHERE name = %s", (name,)).fetchone()
    return float(row[0]) if row else 0.0


def waits_in_postgres(db: str) -> dict[str, tuple[str, float]]:
    """Return, by run, the model it waits for and the seconds left, as the fleet recorded them (nothing when no
    worker ever made the tables)."""
    with psycopg.connect(db, autocommit=True, connect_timeout=10) as conn:
        found = conn.execute("SELECT to_regclass('debate_rate_waits') IS NOT NULL").fetchone()
        if not found or not found[0]:
            return {}
        rows = conn.execute(
            f"SELECT run, model, until - {CLOCK} FROM debate_rate_waits WHERE until > {CLOCK}"
        ).fetchall()
    return {run: (model, float(left)) for run, model, left in rows}
