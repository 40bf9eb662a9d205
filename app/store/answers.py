"""Answers a person sent before their debate could take them, kept in the debate's own database until it does.

A question waits as a LangGraph interrupt; its answer reaches the task that
asked it only through a run resumed with ``Command(resume={id: answer})``, and
the run that asked may still be busy with the other seats' calls of the phase.
The viewer keeps each answer here, one row per (thread, interrupt id), the
moment it is sent: a server that stops before the run takes it loses nothing,
and the next run of the thread delivers it. The first answer to a question is
the one kept (a second tab or a second click finds it taken). A row goes once
its question has left the thread's checkpoint (its phase has ended); until then
it says whether the debate has taken it, for the page.

The functions are synchronous, a short transaction each, so a page being drawn
can read them; async callers run them in a worker thread. They use SQLite or
PostgreSQL, whichever holds the debates.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any

from debate_engine.app.store.database import (
    StorageError,
    failure_text,
    is_postgres,
    is_storage_error,
    sqlite_file,
)

TABLE_SQL = """
CREATE TABLE IF NOT EXISTS debate_answers (
  thread_id TEXT NOT NULL,
  question_id TEXT NOT NULL,
  answer TEXT NOT NULL,
  received_at DOUBLE PRECISION NOT NULL,
  taken_at DOUBLE PRECISION,
  PRIMARY KEY (thread_id, question_id)
)"""
RECEIVE_SQL = (
    "INSERT INTO debate_answers (thread_id, question_id, answer, received_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (thread_id, question_id) DO NOTHING"
)
READ_SQL = (
    "SELECT question_id, answer, taken_at FROM debate_answers WHERE thread_id = ? "
    "ORDER BY received_at"
)
TAKEN_SQL = "UPDATE debate_answers SET taken_at = ? WHERE thread_id = ? AND question_id = ?"
FORGET_SQL = "DELETE FROM debate_answers WHERE thread_id = ? AND question_id = ?"


@dataclass(frozen=True)
class Kept:
    """An answer kept for a question."""

    answer: Any
    """What the person sent, as the debate takes it."""
    taken: bool
    """The debate has taken it: the task that asked has its result, shown once the phase ends."""


class Connection:
    """One short connection to the debate database, with SQLite's ``?`` placeholders on either database."""

    def __init__(self, conn: Any, postgres: bool) -> None:
        self.conn = conn
        self.postgres = postgres

    def run(self, sql: str, *params: Any) -> Any:
        """Run one statement; return its cursor."""
        return self.conn.execute(sql.replace("?", "%s") if self.postgres else sql, params)


@contextmanager
def connected(db: str) -> Iterator[Connection]:
    """Open ``db`` with the answers' table in it, for one transaction committed on leaving.

    A database that fails says so in words, without the URL's password (:class:`StorageError`).
    """
    try:
        if is_postgres(db):
            import psycopg  # start-up: optional postgres extra

            with psycopg.connect(db, connect_timeout=10) as pg:  # commits on a clean exit
                _create_table(pg)
                yield Connection(pg, postgres=True)
        else:
            with closing(sqlite3.connect(sqlite_file(db), timeout=30)) as lite, lite:
                lite.execute(TABLE_SQL)
                yield Connection(lite, postgres=False)
    except Exception as exc:
        if not is_storage_error(exc):
            raise
        raise StorageError(failure_text(db, exc)) from None


def _create_table(conn: Any) -> None:
    """Create the table on PostgreSQL; two servers creating it at once collide on its type's name."""
    import psycopg  # start-up: optional postgres extra

    try:
        with conn.transaction():
            conn.execute(TABLE_SQL)
    except psycopg.errors.UniqueViolation:
        pass  # the other one made it


def receive(db: str, thread: str, answers: dict[str, Any]) -> list[str]:
    """Keep each answer unless its question has one already; return the ids of the answers kept."""
    at = time.time()
    kept = []
    with connected(db) as conn:
        for question, answer in answers.items():
            if conn.run(RECEIVE_SQL, thread, question, json.dumps(answer), at).rowcount == 1:
                kept.append(question)
    return kept


def received(db: str, thread: str) -> dict[str, Kept]:
    """Return the answers kept for ``thread``, by question id, in the order they came."""
    with connected(db) as conn:
        rows = conn.run(READ_SQL, thread).fetchall()
    return {row[0]: Kept(json.loads(row[1]), row[2] is not None) for row in rows}


def taken(db: str, thread: str, questions: Iterable[str]) -> None:
    """Mark the answers to ``questions`` as taken by the debate."""
    at = time.time()
    with connected(db) as conn:
        for question in questions:
            conn.run(TAKEN_SQL, at, thread, question)


def forget(db: str, thread: str, questions: Iterable[str]) -> None:
    """Drop the answers to ``questions``: their phase has ended, or the debate refused them."""
    with connected(db) as conn:
        for question in questions:
            conn.run(FORGET_SQL, thread, question)
