"""``debate list``: every stored debate, from one small record per thread."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from debate_engine.app.errors import EXIT_OK
from debate_engine.app.outputs import add_db, db_of


def register(sub: Any) -> None:
    add_db(sub.add_parser("list", help="list stored debates"))


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.runner import run_until_signal
    from debate_engine.providers.secrets import redact

    rows = run_until_signal(rows_of(db_of(args)))
    if not rows:
        print("no debates yet; start one with `debate run PROBLEM`", file=sys.stderr)
        return EXIT_OK
    print("thread\tupdated\tstatus\tround\tphase\tturns\ttokens\tcost\tproblem")
    for row in rows:
        print(redact("\t".join(row)))
    return EXIT_OK


async def rows_of(db: str) -> list[tuple[str, ...]]:
    """One row per thread: its newest checkpoint's status record, never the whole debate."""
    from debate_engine.app.persistence import athread_busy, open_checkpointer, status_of, thread_ids

    rows: list[tuple[str, ...]] = []
    async with open_checkpointer(db) as saver:
        for thread in await thread_ids(saver):
            status, waiting = await status_of(saver, thread)
            if not status:
                continue
            state = ("done" if status["phase"] == "done" else "waiting for answers" if waiting
                     else "running" if await athread_busy(db, thread) else "interrupted")
            updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(status["updated_at"]))
            rows.append((thread, updated, state, f"{status['round']}/{status['rounds']}", status["phase"],
                         str(status["turns"]), str(status.get("tokens", 0)), f"${status.get('cost', 0.0):.4f}",
                         status["problem"][:60]))
    return rows
