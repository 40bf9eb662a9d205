"""The list's rows, read in two queries on SQLite: 1,000 debates list as fast as a few.

``debate list`` (``rows_of``) reads each thread's newest checkpoint in a query
of its own, which a command run once can afford; a page that lists 1,000
debates cannot. On SQLite every thread's newest checkpoint is read in one
query and the writes pending on them in another, then each row is made as
``debate list`` makes it (the same status record, the same words). PostgreSQL
keeps ``rows_of``.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.standing import STATES, reason_of, row_of, rows_of
from debate_engine.app.store.database import failed_cost, failed_tokens, is_postgres

NEWEST_SQL = """
SELECT c.thread_id, c.checkpoint_id, c.type, c.checkpoint FROM checkpoints c
JOIN (SELECT thread_id, MAX(checkpoint_id) AS newest FROM checkpoints WHERE checkpoint_ns = ''
      GROUP BY thread_id) n
  ON c.thread_id = n.thread_id AND c.checkpoint_id = n.newest
WHERE c.checkpoint_ns = ''
"""
PENDING_SQL = """
SELECT w.thread_id, w.task_id, w.channel, w.type, w.value FROM writes w
JOIN (SELECT thread_id, MAX(checkpoint_id) AS newest FROM checkpoints WHERE checkpoint_ns = ''
      GROUP BY thread_id) n
  ON w.thread_id = n.thread_id AND w.checkpoint_id = n.newest
WHERE w.checkpoint_ns = '' AND w.channel IN ('__interrupt__', '__return__', '__error__')
"""
VERSION_SQL = """
SELECT COUNT(*), MAX(checkpoint_id),
       (SELECT COUNT(*) FROM writes WHERE channel IN ('__interrupt__', '__return__', '__error__'))
FROM checkpoints
"""
"""What changes whenever a row may: a new thread, a new checkpoint, a question, a failed call, an error."""


async def version(saver: Any) -> str:
    """Return a value that changes whenever the list may have (``saver``: an SQLite or PostgreSQL saver)."""
    conn = saver.conn
    if type(conn).__module__.split(".")[0] == "psycopg":
        async with conn.cursor() as cur:  # PostgreSQL's saver names its table of writes in full
            await cur.execute(VERSION_SQL.replace("FROM writes", "FROM checkpoint_writes"))
            found = await cur.fetchone()
        return str(list(found.values()) if isinstance(found, dict) else found)
    async with conn.execute(VERSION_SQL) as cur:
        return str(await cur.fetchone())


PROTOCOLS = ("phases", "roundtable", "sample")
"""What a row's protocol is: a phase debate, a roundtable, or a comparison's single answer or vote."""
ORIGINS = ("hand", "comparison", "fork")
"""Where a debate came from: run by hand (the command line, the start form, the SDK), a comparison's run, a fork."""
FILTERS = {"status": STATES, "protocol": PROTOCOLS, "origin": ORIGINS}
"""The list's filters by their query parameter, each with the values it takes."""


def protocol_of(channels: dict[str, Any]) -> str:
    """Return a debate's protocol (one of ``PROTOCOLS``) from its newest checkpoint's plain channels."""
    if channels.get("turn_count"):
        return "roundtable"
    return "sample" if channels.get("samples") else "phases"


def origin_kind(row: dict[str, Any]) -> str:
    """Return where a listed debate came from, one of ``ORIGINS``."""
    return (row.get("origin") or {}).get("kind", "hand")


def facet(row: dict[str, Any], name: str) -> str:
    """Return a row's value for the filter ``name`` (one of ``FILTERS``)."""
    return origin_kind(row) if name == "origin" else str(row[name])


def matching(rows: list[dict[str, Any]], chosen: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Return the rows whose status, protocol and origin are each among those ``chosen`` (any, where none is)."""
    return [r for r in rows if all(facet(r, k) in v for k, v in chosen.items() if v)]


async def all_rows(saver: BaseCheckpointSaver, db: str) -> list[dict[str, Any]]:
    """Return every debate's row, newest first, with ``debate list``'s status word, why, protocol and origin."""
    if is_postgres(db):
        return as_shown(await _with_protocol(saver, [{**row} for row in await rows_of(db)]))
    return as_shown(await _sqlite_rows(saver, db))


async def _with_protocol(saver: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return ``debate list``'s rows, each with its protocol read from its thread's newest checkpoint."""
    for row in rows:
        found = await saver.aget_tuple({"configurable": {"thread_id": row["thread"]}})
        row["protocol"] = protocol_of(found.checkpoint.get("channel_values", {}) if found else {})
    return rows


def as_shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return ``debate list``'s rows newest first, each with its origin."""
    for row in rows:
        row["origin"] = origin_of(row)
    return sorted(rows, key=lambda r: r["updated_at"], reverse=True)


async def _sqlite_rows(saver: Any, db: str) -> list[dict[str, Any]]:
    """Return ``debate list``'s rows, every thread's newest checkpoint and pending writes read at once."""
    pending: dict[str, list[tuple[str, str, Any]]] = {}
    async with saver.lock:
        async with saver.conn.execute(PENDING_SQL) as cur:
            for thread, task, channel, kind, value in await cur.fetchall():
                pending.setdefault(thread, []).append(
                    (task, channel, saver.serde.loads_typed((kind, value)))
                )
        async with saver.conn.execute(NEWEST_SQL) as cur:
            newest = await cur.fetchall()
    rows = []
    for thread, _, kind, blob in newest:
        channels = saver.serde.loads_typed((kind, blob)).get("channel_values", {})
        if channels.get("status"):
            rows.append(await _row(db, thread, channels, pending.get(thread, [])))
    return rows


async def _row(
    db: str, thread: str, channels: dict[str, Any], writes: list[tuple[str, str, Any]]
) -> dict[str, Any]:
    """Return one row as ``debate list`` makes it (why it stands so included), with failed calls' tokens and the
    protocol."""
    waiting = any(channel == "__interrupt__" for _, channel, _ in writes)
    row = await row_of(db, thread, channels["status"], waiting)
    row["tokens"] += failed_tokens(writes)
    row["cost"] += failed_cost(writes)
    row["forked_from"] = channels.get("forked_from")
    return {
        **row,
        "why": reason_of(row["status"], record_of(channels), writes),
        "protocol": protocol_of(channels),
    }


def origin_of(row: dict[str, Any]) -> dict[str, str] | None:
    """Return where a debate came from: a fork's original, or the comparison it is a run of."""
    thread = row["thread"]
    if row.get("forked_from"):
        origin = row["forked_from"]
        unit = "turn" if row.get("protocol") == "roundtable" else "round"
        return {
            "kind": "fork",
            "thread": origin["thread"],
            "text": f"fork of {unit} {origin['round']:,}",
        }
    if thread.startswith("compare:"):
        name = thread.split(":")[1]
        return {"kind": "comparison", "thread": name, "text": f"comparison {name}"}
    return None
