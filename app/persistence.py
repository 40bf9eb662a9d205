"""Where the command line keeps debates: SQLite by default, PostgreSQL on request.

The default database is ``$DEBATE_DB``, else
``$XDG_DATA_HOME/debate/debates.sqlite`` (``~/.local/share/debate/debates.sqlite``).
``--db postgresql://...`` uses ``langgraph-checkpoint-postgres``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver


class StorageError(RuntimeError):
    """The checkpoint database cannot be opened; the message says why and what to do."""


def default_db() -> str:
    """The database the command line uses when ``--db`` is not given."""
    if os.environ.get("DEBATE_DB"):
        return os.environ["DEBATE_DB"]
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return str(base / "debate" / "debates.sqlite")


def is_postgres(db: str) -> bool:
    """True for a PostgreSQL connection URL."""
    return db.startswith(("postgres://", "postgresql://"))


@contextmanager
def open_checkpointer(db: str) -> Iterator[BaseCheckpointSaver]:
    """Open the checkpointer for ``db`` (a path or a PostgreSQL URL), creating tables as needed."""
    if is_postgres(db):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError:
            raise StorageError("PostgreSQL needs `pip install -e '.[postgres]'`") from None
        try:
            with PostgresSaver.from_conn_string(db) as saver:
                saver.setup()
                yield saver
        except Exception as exc:
            if isinstance(exc, StorageError) or type(exc).__module__.split(".")[0] != "psycopg":
                raise
            raise StorageError(f"cannot use PostgreSQL at the given URL: {type(exc).__name__}") from None
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(db).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"cannot open the debate database {path}: {exc}; pass --db PATH") from None
    try:
        sqlite_saver = SqliteSaver(conn)
        sqlite_saver.setup()
        yield sqlite_saver
    finally:
        conn.close()


def thread_ids(saver: BaseCheckpointSaver) -> list[str]:
    """Every thread in the database, oldest first."""
    query = "SELECT thread_id, MIN(checkpoint_id) AS first FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY first"
    conn = saver.conn  # type: ignore[attr-defined]
    if isinstance(conn, sqlite3.Connection):
        return [row[0] for row in conn.execute(query)]
    with conn.cursor() as cur:
        cur.execute(query)
        return [row["thread_id"] if isinstance(row, dict) else row[0] for row in cur.fetchall()]
