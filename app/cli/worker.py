"""``debate worker``: run queued debates until SIGTERM or Ctrl-C (PostgreSQL only).

Any number of workers on any number of machines share one database. A
worker sends a heartbeat every ``--stall-timeout``/5 seconds and, as often,
requeues the running debates of workers silent for ``--stall-timeout``
seconds; another worker then continues them from their last checkpoint. On
SIGTERM or Ctrl-C it takes no new debate, cancels the ones it runs (every
finished call is in the checkpoint) and hands them back to the queue at once.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import sys
from typing import Any

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError
from debate_engine.app.cli.outputs import add_db, db_of

DEFAULT_STALL_S = 15.0
POLL_S = 1.0
"""How often an idle worker looks for requeued jobs (new jobs arrive at once by LISTEN/NOTIFY)."""


def register(sub: Any) -> None:
    worker = sub.add_parser(
        "worker", help="run queued debates until SIGTERM or Ctrl-C (PostgreSQL)"
    )
    worker.add_argument(
        "--concurrency", type=int, default=4, help="debates at once in this process (default 4)"
    )
    worker.add_argument(
        "--stall-timeout",
        type=float,
        default=DEFAULT_STALL_S,
        metavar="SECONDS",
        help="a worker without a heartbeat this long counts as dead and its debates move to "
        f"another worker within SECONDS * 1.2 + {POLL_S:g} s (default {DEFAULT_STALL_S:g})",
    )
    worker.add_argument("--name", help="this worker's name in `debate jobs` (default HOST:PID)")
    add_db(worker)


def handover_bound(stall_s: float) -> float:
    """Seconds from a worker's death until another worker may claim its debates.

    Its last heartbeat is at most ``stall_s`` old when it counts as dead, a
    sweep runs every ``stall_s / 5`` s, and an idle worker polls every POLL_S.
    """
    return stall_s + stall_s / 5 + POLL_S


def main(args: argparse.Namespace) -> int:
    import asyncio  # start-up: no asyncio in --help

    from debate_engine.app.store.queue import (  # start-up: no procrastinate in --help
        lost_database,
        require_postgres,
    )

    db = db_of(args)
    require_postgres(db, "worker")
    if args.concurrency < 1:
        raise InputError(f"--concurrency {args.concurrency}: run at least 1 debate at once")
    if not 1 <= args.stall_timeout <= 3600:
        raise InputError(f"--stall-timeout {args.stall_timeout:g}: use 1 to 3600 seconds")
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"
    _quiet_job_logs()
    try:
        asyncio.run(_work(db, name, args.concurrency, args.stall_timeout))
    except KeyboardInterrupt:  # a second Ctrl-C while stopping
        return 130
    except Exception as exc:
        raise lost_database(exc, db) from None
    print(f"[{name}] stopped", file=sys.stderr)
    return EXIT_OK


async def _work(db: str, name: str, concurrency: int, stall_s: float) -> None:
    import asyncio  # start-up: no asyncio in --help

    # Until procrastinate installs its own handlers (stop taking jobs, hand running ones back), a signal
    # cancels the start-up: nothing is claimed yet.
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None  # a coroutine run by asyncio.run is always a task
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):  # stopped before any debate was claimed
        await _serve(db, name, concurrency, stall_s)


async def _serve(db: str, name: str, concurrency: int, stall_s: float) -> None:
    import asyncio  # start-up: no asyncio in --help

    from debate_engine.app.store.queue import (  # start-up: no procrastinate in --help
        QUEUE,
        open_queue,
        server_of,
    )
    from debate_engine.app.store.shared_limits import shared_store  # start-up: psycopg
    from debate_engine.graph.builder import compile_debate  # start-up: no langgraph in --help
    from debate_engine.graph.roundtable import (  # start-up: no langgraph in --help
        compile_roundtable,
    )
    from debate_engine.graph.sample import compile_sample  # start-up: no langgraph in --help

    # the rate limits' buckets in the database every worker shares: the fleet draws on one budget per model
    async with open_queue(db, size=concurrency + 1) as (app, saver), shared_store(db):
        # Every protocol a job may name: `debate submit`'s, and `debate compare --queue`'s single and vote.
        graphs = {
            "phases": compile_debate(checkpointer=saver),
            "roundtable": compile_roundtable(checkpointer=saver),
            "sample": compile_sample(checkpointer=saver),
        }
        sweeper = asyncio.create_task(_sweep(app, stall_s, name))
        print(
            f"[{name}] running up to {concurrency} debates at once from {server_of(db)}; a silent worker's "
            f"debates move on within {handover_bound(stall_s):g} s; stop with Ctrl-C or SIGTERM",
            file=sys.stderr,
            flush=True,
        )
        try:
            await app.run_worker_async(
                queues=[QUEUE],
                name=name,
                concurrency=concurrency,
                wait=True,
                fetch_job_polling_interval=POLL_S,
                shutdown_graceful_timeout=0,
                update_heartbeat_interval=stall_s / 5,
                stalled_worker_timeout=stall_s,
                additional_context={"graphs": graphs, "db": db, "worker": name},
                install_signal_handlers=True,
                listen_notify=True,
            )
        finally:
            sweeper.cancel()


async def _sweep(app: Any, stall_s: float, name: str) -> None:
    import asyncio  # start-up: no asyncio in --help

    from debate_engine.app.store.queue import sweep_stalled  # start-up: no procrastinate in --help

    while True:
        try:
            moved = await sweep_stalled(app, stall_s)
        except Exception as exc:  # the database blinked: try again next time
            logging.getLogger(__name__).warning("stalled-job sweep failed: %s", type(exc).__name__)
            moved = 0
        if moved:
            print(
                f"[{name}] requeued {moved} debate(s) of silent workers",
                file=sys.stderr,
                flush=True,
            )
        await asyncio.sleep(stall_s / 5)


class _NoJobTracebacks(logging.Filter):
    """The worker prints one line per job outcome; procrastinate's own job logs would add tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "action", None) not in {
            "job_error",
            "job_error_retry",
            "job_aborted_retry",
        }


def _quiet_job_logs() -> None:
    for handler in logging.getLogger().handlers:
        handler.addFilter(_NoJobTracebacks())
