"""``debate jobs``: the queue per thread (queued, running on which worker, done, failed) with totals.

One row per thread, from its newest job, tab-separated on stdout: thread,
state, worker, attempts, progress (round, phase, turns from the thread's
newest checkpoint), error; a failed debate finished since by ``debate
resume`` counts as done. Totals go to stderr. ``--wait`` draws a progress
bar until nothing is queued or running, then exits 0 if every debate
succeeded, else 3 naming the failed threads and their errors.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from debate_engine.app.cli.exit_codes import EXIT_OK, EXIT_PROVIDER
from debate_engine.app.cli.outputs import add_db, db_of

STATES = ("queued", "running", "done", "failed")
JOBS_SQL = """
SELECT DISTINCT ON (j.lock) j.lock AS thread, j.status::text AS status, j.attempts,
       CASE WHEN n.worker_id IS NOT DISTINCT FROM j.worker_id THEN n.worker END AS worker, j.worker_id, n.error
  FROM procrastinate_jobs j LEFT JOIN debate_job_notes n ON n.job_id = j.id
 WHERE j.queue_name = %(queue)s AND j.task_name = %(task)s
 ORDER BY j.lock, j.id DESC"""
STATE_OF = {
    "todo": "queued",
    "doing": "running",
    "succeeded": "done",
    "failed": "failed",
    "aborted": "failed",
    "cancelled": "failed",
}


def register(sub: Any) -> None:
    jobs = sub.add_parser(
        "jobs", help="queued, running, done and failed debates of the queue (PostgreSQL)"
    )
    jobs.add_argument(
        "--wait",
        action="store_true",
        help="show progress until nothing is queued or running; "
        "exit 0 if every debate succeeded, else 3",
    )
    jobs.add_argument(
        "--interval", type=float, default=1.0, metavar="SECONDS", help="--wait polls this often"
    )
    add_db(jobs)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.runner import run_until_signal  # start-up: no langgraph in --help
    from debate_engine.app.store.queue import (  # start-up: no procrastinate in --help
        lost_database,
        require_postgres,
    )

    db = db_of(args)
    require_postgres(db, "jobs")
    try:
        return run_until_signal(_jobs(db, args.wait, max(args.interval, 0.1)))
    except Exception as exc:
        raise lost_database(exc, db) from None


async def _jobs(db: str, wait: bool, interval: float) -> int:
    import asyncio  # start-up: no asyncio in --help

    from debate_engine.app.store.queue import open_queue  # start-up: no procrastinate in --help

    async with open_queue(db) as (app, saver):
        rows = await job_rows(app, saver)
        bar = Bar()
        while wait and any(r["state"] in ("queued", "running") for r in rows):
            bar.show(rows)
            await asyncio.sleep(interval)
            rows = await job_rows(app, saver)
        bar.close(rows)
        if not rows:
            print("no debates queued yet; queue some with `debate submit`", file=sys.stderr)
            return EXIT_OK
        await print_rows(saver, rows)
    failed = [r for r in rows if r["state"] == "failed"]
    if wait and failed:
        print(
            f"{len(failed)} debate(s) failed; fix the cause, then `debate submit --thread-id THREAD` "
            "or `debate resume THREAD` continues each from its last checkpoint:",
            file=sys.stderr,
        )
        for row in failed:
            print(f"  {row['thread']}: {row['error']}", file=sys.stderr)
        return EXIT_PROVIDER
    return EXIT_OK


async def job_rows(app: Any, saver: Any) -> list[dict[str, Any]]:
    """One row per thread from its newest job: thread, state, worker, attempts, error.

    A failed job whose thread has since finished (``debate resume`` outside the queue) counts as done.
    """
    from debate_engine.app.store.database import status_of  # start-up: no langgraph in --help
    from debate_engine.app.store.queue import QUEUE, TASK  # start-up: no procrastinate in --help

    rows = await app.connector.execute_query_all_async(JOBS_SQL, queue=QUEUE, task=TASK)
    out = []
    for row in rows:
        state = STATE_OF.get(row["status"], row["status"])
        worker = row["worker"] or (f"worker #{row['worker_id']}" if row["worker_id"] else "")
        error = row["error"] or (
            {"aborted": "aborted", "cancelled": "cancelled"}.get(row["status"], "")
        )
        status = (await status_of(saver, row["thread"]))[0] if state == "failed" else None
        if status and status.get("phase") == "done":
            state = "done"
        out.append(
            {
                "thread": row["thread"],
                "state": state,
                "worker": worker if state == "running" else "",
                "attempts": row["attempts"],
                "error": error if state != "done" else "",
            }
        )
    return out


def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    return counts


async def print_rows(saver: Any, rows: list[dict[str, Any]]) -> None:
    from debate_engine.app.store.database import status_of  # start-up: no langgraph in --help

    print("thread\tstate\tworker\tattempts\tprogress\terror")
    for row in rows:
        status, _ = await status_of(saver, row["thread"])
        progress = (
            f"{status['round']}/{status['rounds']} {status['phase']}, {status['turns']} turns"
            if status
            else "not started"
        )
        print(
            "\t".join(
                [
                    row["thread"],
                    row["state"],
                    row["worker"] or "-",
                    str(row["attempts"]),
                    progress,
                    row["error"] or "-",
                ]
            )
        )
    counts = totals(rows)
    print(
        f"{len(rows)} debate(s): " + ", ".join(f"{counts[s]} {s}" for s in STATES), file=sys.stderr
    )


class Bar:
    """A progress bar on stderr: redrawn in place on a terminal, one line per change otherwise."""

    WIDTH = 30

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = ""
        self.began = time.monotonic()

    def show(self, rows: list[dict[str, Any]]) -> None:
        counts = totals(rows)
        ended = counts["done"] + counts["failed"]
        filled = self.WIDTH * ended // max(len(rows), 1)
        text = (
            f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {ended}/{len(rows)} finished: "
            + ", ".join(f"{counts[s]} {s}" for s in STATES)
        )
        if text != self.last:
            elapsed = f" ({time.monotonic() - self.began:.0f} s)"
            print(
                ("\r" if self.tty else "") + text + elapsed,
                end="" if self.tty else "\n",
                file=sys.stderr,
                flush=True,
            )
            self.last = text

    def close(self, rows: list[dict[str, Any]]) -> None:
        if self.last:
            self.show(rows)
            if self.tty:
                print(file=sys.stderr)
