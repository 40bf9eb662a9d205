"""The debate queue: one procrastinate job per debate thread, on the debates' own PostgreSQL database.

``debate submit`` defers jobs, ``debate worker`` runs them, ``debate jobs``
reads them. A job's whole state is its thread's checkpoints (the official
``langgraph-checkpoint-postgres`` saver), so any worker can run any job: a new
thread starts from its problem and settings, a thread that already has
checkpoints continues from the last one, on the protocol its state names (a
new thread's job names it). Procrastinate claims jobs with
``SKIP LOCKED``, runs one job per thread at a time (the job ``lock`` is the
thread id), and keeps worker heartbeats; every worker sweeps the running jobs
of workers silent for ``stall_s`` back into the queue. A worker stopped by a
signal cancels its debates (finished calls are in the checkpoint) and hands
them back at once. Each job also holds the thread's advisory lock, so a
``debate run``/``resume`` of the same thread elsewhere never runs beside it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command
from procrastinate import App, PsycopgConnector
from procrastinate.exceptions import ConnectorException
from procrastinate.job_context import AbortReason, JobContext
from procrastinate.jobs import Job
from procrastinate.retry import BaseRetryStrategy, RetryDecision
from procrastinate.schema import SchemaManager
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from debate_engine.app.cli.runner import ended
from debate_engine.app.store.database import (
    DatabaseInputError,
    ThreadBusy,
    athread_lock,
    is_postgres,
    schema_lock,
)
from debate_engine.config.context import context_dict, context_for
from debate_engine.config.settings import RunSettings
from debate_engine.config.settled import Settled
from debate_engine.errors import InputError
from debate_engine.graph.by_protocol import protocol_of
from debate_engine.nodes.setup import begin
from debate_engine.providers.failures import is_provider_error
from debate_engine.providers.secrets import redact

QUEUE = "debates"
TASK = "debate.run"
BUSY_RETRY_S = 5
"""A job whose thread another process runs (``debate resume`` elsewhere) tries again this much later."""
SWEEP_LOCK = 7_294_002  # advisory-lock key: one process at a time sweeps stalled jobs (the schema's: persistence)
NOTES_SQL = """
CREATE TABLE IF NOT EXISTS debate_job_notes (
  job_id bigint PRIMARY KEY,
  thread_id text NOT NULL,
  worker_id bigint,
  worker text,
  error text,
  updated_at timestamptz NOT NULL DEFAULT now()
)"""
NOTE_SQL = """
INSERT INTO debate_job_notes (job_id, thread_id, worker_id, worker, error)
VALUES (%(job_id)s, %(thread_id)s, %(worker_id)s, %(worker)s, %(error)s)
ON CONFLICT (job_id) DO UPDATE SET
  worker_id = COALESCE(EXCLUDED.worker_id, debate_job_notes.worker_id),
  worker = COALESCE(EXCLUDED.worker, debate_job_notes.worker),
  error = EXCLUDED.error, updated_at = now()"""


class HandedBack(Exception):
    """The worker was stopped mid-debate; the job goes back to the queue."""


class Retry(BaseRetryStrategy):
    """Requeue a handed-back job at once and a busy thread's job a little later; a failure is final."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, HandedBack):
            return RetryDecision(retry_in={"seconds": 0})
        if isinstance(exception, ThreadBusy):
            return RetryDecision(retry_in={"seconds": BUSY_RETRY_S})
        return None


def require_postgres(db: str, command: str) -> None:
    """Refuse a SQLite database: workers on several machines need one shared server."""
    if not is_postgres(db):
        raise InputError(
            f"`debate {command}` needs a PostgreSQL database that every worker shares: pass --db "
            f"postgresql://USER@HOST:PORT/DBNAME or set DEBATE_DB; {db} is a SQLite file, which only "
            "one machine can use (run debates there with `debate run`)"
        )


def server_of(db: str) -> str:
    """``host:port/dbname`` of a URL, never its password."""
    try:
        parts = conninfo_to_dict(db)
    except Exception:
        return "the given URL"
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


async def reachable(db: str) -> None:
    """Connect once, quickly, so a bad URL or a server that is down fails with a named error."""
    try:
        conn = await psycopg.AsyncConnection.connect(db, connect_timeout=5)
    except psycopg.ProgrammingError as exc:
        reason = (
            redact(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        )
        raise DatabaseInputError(
            f"--db is not a valid PostgreSQL URL ({reason}); "
            "use postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME"
        ) from None
    except psycopg.OperationalError as exc:
        reason = redact(" ".join(str(exc).split())[:300]) or type(exc).__name__
        raise DatabaseInputError(
            f"cannot reach PostgreSQL at {server_of(db)}: {reason}; "
            "check that the server runs and the --db / DEBATE_DB URL"
        ) from None
    await conn.close()


def lost_database(exc: BaseException, db: str) -> BaseException:
    """Return a database failure as a named DatabaseInputError; any other exception unchanged."""
    if isinstance(exc, ConnectorException) and isinstance(exc.__cause__, psycopg.Error):
        exc = exc.__cause__
    if isinstance(exc, psycopg.Error | ConnectorException):
        return DatabaseInputError(
            f"lost PostgreSQL at {server_of(db)} ({type(exc).__name__}); "
            "unfinished debates stay in the queue and continue when a worker runs again"
        )
    return exc


def make_app(db: str) -> App:
    """Return the procrastinate app on ``db`` with the debate task."""
    app = App(
        connector=PsycopgConnector(
            conninfo=db, min_size=1, max_size=4, kwargs={"connect_timeout": 10}
        )
    )
    app.task(name=TASK, queue=QUEUE, pass_context=True, retry=Retry())(run_debate)
    return app


@asynccontextmanager
async def open_queue(db: str, size: int = 2) -> AsyncIterator[tuple[App, Any]]:
    """Yield the opened app and a checkpoint saver on a pool of ``size`` connections, tables created as needed."""
    await reachable(db)
    pool = AsyncConnectionPool(
        db,
        min_size=1,
        max_size=max(size, 1),
        open=False,
        kwargs={
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "connect_timeout": 10,
        },
    )
    await pool.open(wait=True, timeout=30)
    try:
        saver = AsyncPostgresSaver(conn=pool)  # type: ignore[arg-type]  # the saver types its pool with dict rows; ours yields them too
        await prepare(db, saver)
        app = make_app(db)
        async with app.open_async():
            yield app, saver
    finally:
        await pool.close()


async def prepare(db: str, saver: Any) -> None:
    """Create the queue's and the checkpointer's tables, one process at a time (``schema_lock``)."""
    async with schema_lock(db) as conn:
        row = await (
            await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
        ).fetchone()
        if not row or not row[0]:
            await conn.execute(SchemaManager.get_schema())
        await conn.execute(NOTES_SQL)
        await saver.setup()
    # closing the connection released the lock


def new_job(
    thread_id: str,
    problem: str,
    context: dict[str, Any],
    protocol: str = "phases",
    samples: int | None = None,
    settings: RunSettings | None = None,
) -> Job:
    """Return a job for one thread (a sample's with its ``samples``): ``lock`` runs one job per thread at a time,
    ``queueing_lock`` queues it once.

    ``settings`` are the run's, resolved where it was submitted: the worker starts the run on them and
    resolves nothing.
    """
    given: dict[str, Any] = {
        "thread_id": thread_id,
        "problem": problem,
        "context": context,
        "protocol": protocol,
        **({"settings": settings} if settings is not None else {}),
    }
    return Job(
        queue=QUEUE,
        lock=thread_id,
        queueing_lock=thread_id,
        task_name=TASK,
        task_kwargs=given if samples is None else {**given, "samples": samples},
    )


async def note(app: App, job: Job, *, worker: str | None = None, error: str | None = None) -> None:
    """Record who runs a job (``debate jobs`` shows it) or why it failed."""
    await app.connector.execute_query_async(
        NOTE_SQL,
        job_id=job.id,
        thread_id=job.lock,
        worker_id=job.worker_id if worker else None,
        worker=worker,
        error=error,
    )


def error_text(exc: BaseException) -> str:
    """Return a failure in one line, named, secrets removed."""
    text = f"{type(exc).__name__}: {' '.join(str(exc).split())}".rstrip(": ")
    if is_provider_error(exc):
        text = f"the model provider failed: {text}"
    return redact(text)[:500]


async def run_debate(
    job: JobContext,
    *,
    thread_id: str,
    problem: str,
    context: dict[str, Any],
    protocol: str = "phases",
    samples: int = 1,
    settings: RunSettings | None = None,
) -> str:
    """Return the task: run (or continue) one debate thread to its end (a job naming no protocol: a phase debate's)."""
    extra = job.additional_context
    name = extra["worker"]
    await note(job.app, job.job, worker=name)
    try:
        async with athread_lock(extra["db"], thread_id):
            values = await drive_thread(
                extra["graphs"], thread_id, problem, context, name, protocol, samples, settings
            )
    except asyncio.CancelledError:
        if job.abort_reason() != AbortReason.SHUTDOWN:
            raise
        _say(name, f"{thread_id}: stopped; handed back to the queue")
        raise HandedBack(f"worker {name} stopped") from None
    except Exception as exc:
        text = error_text(exc)
        waiting = f"waiting: {text}" if isinstance(exc, ThreadBusy) else text
        await note(job.app, job.job, error=waiting)
        _say(name, f"{thread_id}: {waiting}")
        raise
    _say(name, f"{thread_id}: done, {len(values.get('transcript') or [])} turns")
    return "done"


async def drive_thread(
    graphs: dict[str, Any],
    thread_id: str,
    problem: str,
    context: dict[str, Any],
    name: str,
    protocol: str = "phases",
    samples: int = 1,
    settings: RunSettings | None = None,
) -> Any:
    """Start the thread from its problem, or continue it from its last checkpoint; answer no questions.

    A stored thread continues on the protocol its state names, whatever the job says (resubmitting continues
    that debate); a new ``sample`` draws ``samples`` answers; ``graphs`` share the checkpointer. A new thread
    starts on the job's ``settings`` (resolved where it was submitted); a job queued without them has the
    graph's first node resolve its context.
    """
    config: Any = {"configurable": {"thread_id": thread_id}}
    snapshot = await graphs["phases"].aget_state(config)  # the values, in one state schema for both
    protocol = protocol_of(snapshot.values) if snapshot.values else protocol
    graph, run_context = graphs[protocol], context_for(protocol, context)
    if graph is not graphs["phases"]:
        snapshot = await graph.aget_state(
            config
        )  # what runs next, only the thread's own graph knows
    if snapshot.values and ended(snapshot):
        return snapshot.values  # finished before this job ran
    if not snapshot.values and not problem:
        raise InputError(f"thread {thread_id} holds no debate and the job has no problem")
    status = snapshot.values.get("status") or {}
    _say(
        name,
        f"{thread_id}: "
        + (
            f"continuing at round {status.get('round')}/{status.get('rounds')}, "
            f"{status.get('phase')}"
            if snapshot.values
            else f"starting ({protocol})"
        ),
    )
    extra = {"samples": samples} if protocol == "sample" else {}
    payload: Any = None
    if not snapshot.values and settings is not None:
        settled = Settled(run_context, settings)
        await begin(graph, config, settled.intake(problem, protocol=protocol, **extra))
    elif (
        not snapshot.values
    ):  # the settings travel with the input: a stop before setup resumes with them
        payload = {"problem": problem, "context": context_dict(run_context), **extra}
    while True:
        stream = graph.astream(
            payload, config, context=run_context, stream_mode="updates", durability="sync"
        )
        async for _ in stream:
            pass
        snapshot = await graph.aget_state(config)
        if not snapshot.interrupts:
            return snapshot.values
        request = snapshot.interrupts[0].value
        if (
            "questions" not in request
        ):  # a person's turn: nobody here can answer it, and asking again loops
            raise InputError(
                f"thread {thread_id} waits for a person's answer; answer it with `debate resume`"
            )
        payload = Command(
            resume={e["agent_id"]: [""] * len(e["questions"]) for e in request["questions"]}
        )


async def sweep_stalled(app: App, stall_s: float) -> int:
    """Requeue the running jobs of workers without a heartbeat for ``stall_s`` (one sweeper at a time)."""
    async with app.connector.pool.connection() as conn, conn.transaction():  # type: ignore[attr-defined]  # typed as the base connector; this one is psycopg's
        got = await (
            await conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (SWEEP_LOCK,))
        ).fetchone()
        if not got or not got[0]:
            return 0
        stalled = list(
            await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=stall_s)
        )
        for job in stalled:
            await app.job_manager.retry_job(job)
    return len(stalled)


def _say(worker: str, text: str) -> None:
    print(f"[{worker}] {text}", file=sys.stderr, flush=True)
