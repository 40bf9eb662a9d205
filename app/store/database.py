"""Where the command line keeps debates: SQLite by default, PostgreSQL on request.

The default database is ``$DEBATE_DB``, else ``$XDG_DATA_HOME/debate/debates.sqlite``
(``~/.local/share/debate/debates.sqlite``). ``--db postgresql://...`` uses ``langgraph-checkpoint-postgres``.
Listing reads each thread's newest checkpoint only (its small ``status`` record), never a whole debate, and one
process at a time may run a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import sqlite3
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import IO, Any, LiteralString, NotRequired, Protocol, runtime_checkable

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from debate_engine.errors import InputError, StorageError
from debate_engine.graph.state import ForkOrigin, Status
from debate_engine.memory.records import Usage
from debate_engine.providers.secrets import redact

# Each step jumps to the next thread id through the primary-key index: the
# time grows with the number of threads, not with the checkpoints they hold.
THREADS_SQL = """
WITH RECURSIVE t(id) AS (
  SELECT MIN(thread_id) FROM checkpoints
  UNION ALL
  SELECT (SELECT MIN(thread_id) FROM checkpoints WHERE thread_id > t.id) FROM t WHERE t.id IS NOT NULL
)
SELECT id FROM t WHERE id IS NOT NULL
"""


class DatabaseInputError(InputError, RuntimeError):
    """The checkpoint database cannot be used; the message says why and what to do."""


class ThreadBusy(DatabaseInputError):
    """Another process is running this debate."""


def default_db() -> str:
    """Return the database the command line uses when ``--db`` is not given."""
    if os.environ.get("DEBATE_DB"):
        return os.environ["DEBATE_DB"]
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return str(base / "debate" / "debates.sqlite")


def is_postgres(db: str) -> bool:
    """Return True for a PostgreSQL connection URL."""
    return db.startswith(("postgres://", "postgresql://"))


def is_storage_error(exc: BaseException) -> bool:
    """Return True for an error of SQLite or psycopg, the two databases the checkpointers use."""
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.split(".")[0] == "psycopg"


@asynccontextmanager
async def open_checkpointer(db: str) -> AsyncIterator[BaseCheckpointSaver]:
    """Open the async checkpointer for ``db`` (a path or a PostgreSQL URL), creating tables as needed.

    A failure while opening is the user's setting (:class:`DatabaseInputError`); one
    after, while a debate reads or writes, is :class:`StorageError`: the
    debate was under way and resumes once the database works again.
    """
    async with AsyncExitStack() as stack:
        saver = await (_open_postgres if is_postgres(db) else _open_sqlite)(stack, db)
        try:
            yield saver
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            raise StorageError(failure_text(db, exc)) from None


def failure_text(db: str, exc: BaseException) -> str:
    """Return what failed, in words, without the URL's password or any configured secret."""
    detail = " ".join(str(exc).split())[:300]
    return redact(f"the debate database {db} failed ({type(exc).__name__}: {detail})")


async def _open_sqlite(stack: AsyncExitStack, db: str) -> BaseCheckpointSaver:
    path = await asyncio.to_thread(sqlite_file, db)
    try:
        saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(path)))
        stack.push_async_callback(_settle, saver)  # runs before the connection closes
        await saver.conn.execute("PRAGMA journal_mode=WAL")
        await saver.conn.execute(
            "PRAGMA busy_timeout=30000"
        )  # wait out a closing writer under load
        await saver.setup()
    except sqlite3.Error as exc:
        raise DatabaseInputError(
            f"cannot use the debate database {path}: {exc}; pass --db PATH"
        ) from None
    return saver


async def _settle(saver: Any) -> None:
    """Let a checkpoint write still under way when the run ended finish before the connection closes.

    LangGraph saves a finished call's writes in a task of their own; when a sibling call fails,
    the run ends while that task may still be writing. Closed under it, the connection stays open
    as a zombie holding the write lock (its cursor outlives the close), and the next command in the
    same process (a test's resume, a worker's next debate) finds the database locked.
    """
    await asyncio.sleep(0)  # a write scheduled as the run ended takes its turn at the lock first
    async with saver.lock:  # the saver's own: held by each write from its insert to its commit
        with contextlib.suppress(
            sqlite3.Error, ValueError
        ):  # a failed or closed database: closing rolls back
            if saver.conn.in_transaction:
                await saver.conn.rollback()


SCHEMA_LOCK = 7_294_001
"""The advisory-lock key under which one process at a time creates or migrates the tables."""


@asynccontextmanager
async def schema_lock(db: str) -> AsyncIterator[Any]:
    """Hold the schema lock on a connection of its own (yielded); it is released when the connection closes.

    The lock is polled, never waited for in a statement (an open transaction): the saver's ``CREATE INDEX
    CONCURRENTLY`` in the process holding the lock would wait for it forever.
    """
    import psycopg  # start-up: optional postgres extra

    async with await psycopg.AsyncConnection.connect(
        db, autocommit=True, connect_timeout=10
    ) as conn:
        while True:
            got = await (
                await conn.execute("SELECT pg_try_advisory_lock(%s)", (SCHEMA_LOCK,))
            ).fetchone()
            if got and got[0]:
                break
            await asyncio.sleep(0.1)
        yield conn


async def _open_postgres(stack: AsyncExitStack, db: str) -> BaseCheckpointSaver:
    try:
        from langgraph.checkpoint.postgres.aio import (  # start-up: optional postgres extra
            AsyncPostgresSaver,
        )
    except ImportError:
        raise DatabaseInputError(
            "PostgreSQL needs `pip install 'debate-engine[postgres]'`"
        ) from None
    try:
        saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(db))
        async with schema_lock(
            db
        ):  # two processes migrating at once collide on the migrations' keys
            await saver.setup()
    except Exception as exc:
        if not is_storage_error(exc):
            raise
        raise DatabaseInputError(
            f"cannot use PostgreSQL at the given URL ({type(exc).__name__}); check --db"
        ) from None
    return saver


def _expanded(db: str) -> Path:
    try:
        return Path(db).expanduser()
    except RuntimeError:
        raise DatabaseInputError(
            f"--db {db}: cannot expand the ~ in it; give a full path"
        ) from None


def sqlite_file(db: str) -> Path:
    """Return the SQLite file ``db`` names, its folder made; a :class:`DatabaseInputError` says what is wrong with it."""
    path = _expanded(db)
    try:
        is_dir = path.is_dir()
    except OSError as exc:  # a name too long for the file system
        raise DatabaseInputError(
            f"--db: cannot use {db} ({exc.strerror}); pass --db PATH"
        ) from None
    if is_dir:
        raise DatabaseInputError(
            f"--db {db} is a directory; give a file path such as {path / 'debates.sqlite'}"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseInputError(
            f"cannot create the folder of {path}: {exc.strerror}; pass --db PATH"
        ) from None
    return path


@runtime_checkable
class Connected(Protocol):
    """A checkpointer that holds its database connection, as both of ours (SQLite, PostgreSQL) do."""

    @property
    def conn(self) -> Any:
        """The driver's connection: aiosqlite's or psycopg's, which share no type."""


def connection_of(saver: BaseCheckpointSaver) -> Any:
    """Return the database connection of one of our checkpointers, to query it directly."""
    if not isinstance(saver, Connected):
        raise TypeError(f"{type(saver).__name__} holds no database connection")
    return saver.conn


async def thread_ids(saver: BaseCheckpointSaver) -> list[str]:
    """Every thread in the database, sorted by id."""
    conn = connection_of(saver)
    if is_postgres_conn(conn):
        async with conn.cursor() as cur:
            await cur.execute(THREADS_SQL)
            rows = await cur.fetchall()
        return [r["id"] if isinstance(r, dict) else r[0] for r in rows]
    async with conn.execute(THREADS_SQL) as cur:
        return [row[0] for row in await cur.fetchall()]


def is_postgres_conn(conn: Any) -> bool:
    """Return True for a psycopg connection."""
    return type(conn).__module__.split(".")[0] == "psycopg"


class ListedStatus(Status):
    """A thread's ``status`` record as a list reads it from the newest checkpoint alone: with the fork's
    origin beside it, and the tokens of failed calls the spend has not settled yet counted in."""

    forked_from: NotRequired[ForkOrigin | None]
    unsettled_tokens: NotRequired[int]


async def status_of(
    saver: BaseCheckpointSaver, thread: str, found: CheckpointTuple | None = None
) -> tuple[ListedStatus | None, bool]:
    """Return a thread's ``status`` record (with ``forked_from`` on a fork) and whether it waits for an answer, from its
    newest checkpoint only (``found``, if read already): LangGraph's untyped channel values become the typed record."""
    found = found or await saver.aget_tuple({"configurable": {"thread_id": thread}})
    if found is None:
        return None, False
    waiting = any(w[1] == "__interrupt__" for w in found.pending_writes or [])
    channels = found.checkpoint.get("channel_values", {})
    status: ListedStatus | None = channels.get("status")
    if status and channels.get("forked_from"):  # a fork names its origin in the same small read
        status = {**status, "forked_from": channels["forked_from"]}
    unsettled = failed_tokens(found.pending_writes or [])
    if status and unsettled:
        status = {
            **status,
            "tokens": status.get("tokens", 0) + unsettled,
            "cost": status.get("cost", 0.0) + failed_cost(found.pending_writes or []),
            "unsettled_tokens": unsettled,
        }
    return status, waiting


def failed_tokens(writes: Any) -> int:
    """Tokens spent by calls that failed in an unfinished phase: kept as task results, charged to the debate's
    spend (in dollars too) when the phase completes on resume, counted here at once."""
    return sum(usage.get("total_tokens", 0) for _, usage in _failed_attempts(writes))


def failed_cost(writes: Any) -> float:
    """Dollars of those calls, as each failed reply priced its attempts (the resume charges the same)."""
    return sum(
        float(value.get("cost") or 0.0)
        for _, channel, value in writes
        if channel == "__return__" and isinstance(value, dict) and value.get("failed")
    )


def _failed_attempts(writes: Any) -> list[tuple[str, Usage]]:
    """Return the model and usage of every attempt of the failed calls among a checkpoint's pending writes."""
    return [
        (str(a.get("model") or ""), a["usage"])
        for _, channel, value in writes
        if channel == "__return__" and isinstance(value, dict) and value.get("failed")
        for a in value.get("attempts") or []
        if a.get("usage")
    ]


@asynccontextmanager
async def athread_lock(db: str, thread: str) -> AsyncIterator[None]:
    """Hold the thread for this process; refuse when another process holds it.

    SQLite: a file lock next to the database, taken in a worker thread. PostgreSQL:
    a session-level advisory lock (``pg_try_advisory_lock``) on an async connection
    of its own, so processes on any machine sharing the database exclude each
    other. Either is released when the process dies, even by SIGKILL.
    """
    if is_postgres(db):
        async with _advisory_lock(db, thread):
            yield
        return
    handle = await asyncio.to_thread(_file_lock, db, thread)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _file_lock(db: str, thread: str) -> IO[str]:
    """Return the open, locked file that holds ``thread`` of the SQLite database ``db``."""
    tag = hashlib.sha256(thread.encode()).hexdigest()[:16]
    folder = Path(f"{_expanded(db)}.locks")
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / f"{tag}.lock", "w")  # noqa: SIM115 - held for the whole run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise _busy(thread) from None
    return handle


LOCK_SESSION_SQL: tuple[LiteralString, ...] = (
    "SET tcp_keepalives_idle = 5",
    "SET tcp_keepalives_interval = 2",
    "SET tcp_keepalives_count = 3",
)
"""A lost machine's lock is freed when the server's keepalives find its connection dead (~11 s), not hours later."""


def lock_key(thread: str) -> int:
    """Return the thread's advisory-lock key: a signed 64-bit number from its id."""
    return int.from_bytes(
        hashlib.sha256(b"debate-thread\0" + thread.encode()).digest()[:8], "big", signed=True
    )


def _busy(thread: str) -> ThreadBusy:
    return ThreadBusy(
        f"debate {thread} is running in another process; wait for it or stop it first"
    )


@asynccontextmanager
async def _advisory_lock(db: str, thread: str) -> AsyncIterator[None]:
    import psycopg  # start-up: optional postgres extra

    try:
        conn = await psycopg.AsyncConnection.connect(db, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise DatabaseInputError(
            f"cannot use PostgreSQL at the given URL ({type(exc).__name__}); check --db"
        ) from None
    async with conn:
        for setting in LOCK_SESSION_SQL:
            await conn.execute(setting)
        row = await (
            await conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(thread),))
        ).fetchone()
        if not row or not row[0]:
            raise _busy(thread)
        yield  # closing the connection ends the session and releases the lock


async def athread_busy(db: str, thread: str) -> bool:
    """Return True when another process runs ``thread`` now."""
    try:
        async with athread_lock(db, thread):
            return False
    except ThreadBusy:
        return True


def thread_busy(db: str, thread: str) -> bool:
    """Return True when another process runs ``thread`` now: :func:`athread_busy` for a page being drawn.

    SQLite's file lock is tried in place (a non-blocking call); PostgreSQL's advisory lock lives on an
    async connection, so it is tried on a loop of its own in a worker thread.
    """
    if is_postgres(db):
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, athread_busy(db, thread)).result()
    try:
        handle = _file_lock(db, thread)
    except ThreadBusy:
        return True
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()
    return False
