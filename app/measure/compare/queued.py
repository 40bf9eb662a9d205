"""Runs on the debate queue (``--queue``): submit unfinished threads as jobs, then wait for ``debate worker``s.

``debate compare --queue`` and ``debate fork --variants --queue`` write or name
their threads as they do in-process, then hand each unfinished one to the queue
(one job per thread, as ``debate submit`` does) instead of running it here. A
thread whose job is already queued or running is not submitted again, so the
same command after a Ctrl-C finds the jobs it left and waits for them.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from debate_engine.app.measure.compare.execute import (
    Comparison,
    finished,
    record_of,
    show_progress,
    spend_of,
)
from debate_engine.app.measure.compare.protocols import Protocol
from debate_engine.app.measure.compare.tasks import Task
from debate_engine.config.context import context_dict
from debate_engine.errors import ProviderError

POLL_S = 0.5
GRAPH_PROTOCOL = {"sample": "sample", "debate": "phases", "roundtable": "roundtable"}
"""A comparison's graph as a job names its protocol."""
NEWEST_SQL = """
SELECT DISTINCT ON (j.lock) j.lock AS thread, j.status::text AS status, n.error
  FROM procrastinate_jobs j LEFT JOIN debate_job_notes n ON n.job_id = j.id
 WHERE j.queue_name = %(queue)s AND j.lock = ANY(%(locks)s)
 ORDER BY j.lock, j.id DESC"""
ACTIVE = ("todo", "doing")


class QueuedRunError(ProviderError):
    """A worker failed a run (the provider, after its retries); the thread keeps every finished call."""


@dataclass(frozen=True)
class Run:
    """One thread to run on the queue: a new one from its problem, or one with checkpoints (``problem`` empty)."""

    thread: str
    problem: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    protocol: str = "phases"
    samples: int | None = None
    settings: Any = None
    """The run's settings as the comparison resolved them (once per protocol): the worker starts on them."""


async def newest_jobs(app: Any, threads: list[str]) -> dict[str, dict[str, Any]]:
    """Each thread's newest job: its status and the error a worker noted."""
    from debate_engine.app.store.queue import QUEUE  # start-up: optional postgres extra

    rows = await app.connector.execute_query_all_async(NEWEST_SQL, queue=QUEUE, locks=threads)
    return {row["thread"]: row for row in rows}


async def submit(app: Any, runs: list[Run]) -> int:
    """Queue every run whose thread has no queued or running job; how many were queued."""
    from debate_engine.app.store.queue import new_job  # start-up: optional postgres extra

    jobs = await newest_jobs(app, [r.thread for r in runs])
    fresh = [r for r in runs if (jobs.get(r.thread) or {}).get("status") not in ACTIVE]
    if fresh:
        await app.job_manager.batch_defer_jobs_async(
            [
                new_job(r.thread, r.problem, r.context, r.protocol, r.samples, r.settings)
                for r in fresh
            ]
        )
    return len(fresh)


async def wait(
    app: Any, threads: list[str], done: Callable[[str], Awaitable[None]]
) -> dict[str, str]:
    """Poll until no thread's job is queued or running, calling ``done`` once per thread a worker finished.

    Returns the failed threads with their errors.
    """
    left, failed = set(threads), {}
    while left:
        jobs = await newest_jobs(app, sorted(left))
        for thread in sorted(left):
            status = (jobs.get(thread) or {}).get("status")
            if status in ACTIVE:
                continue
            left.discard(thread)
            if status == "succeeded":
                await done(thread)
            else:
                failed[thread] = (jobs.get(thread) or {}).get(
                    "error"
                ) or f"its job is {status or 'missing'}"
        if left:
            await asyncio.sleep(POLL_S)
    return failed


def failure(failed: dict[str, str], again: str) -> QueuedRunError:
    """Return the failed runs, named with their errors, and how to run them again."""
    lines = [
        f"{len(failed)} run(s) failed on the workers:",
        *(f"{t}: {e}" for t, e in sorted(failed.items())),
    ]
    return QueuedRunError(
        "\n  ".join(lines) + f"\nEvery finished call is kept; fix the cause, then {again}"
    )


async def run_protocol_queued(
    comparison: Comparison, protocol: Protocol, tasks: list[Task], seeds: int
) -> list[dict[str, Any]]:
    """Every scored (task, seed) run of ``protocol`` on the workers, in task order.

    Finished runs are read back; a run its own spend cap stopped is left out.
    """
    runs = [
        (task, seed, comparison.thread(protocol, task, seed))
        for task in tasks
        for seed in range(1, seeds + 1)
    ]
    by_thread = {thread: (task, seed) for task, seed, thread in runs}
    records: dict[str, dict[str, Any]] = {}

    async def read(thread: str, values: dict[str, Any] | None = None) -> None:
        task, seed = by_thread[thread]
        values = values or await _values(comparison, protocol, thread)
        tokens, cost = spend_of(values)
        comparison.spent["tokens"] += tokens
        comparison.spent["cost"] += cost
        if values.get("stopped") == "budget":  # its own cap (the config's) stopped it: never scored
            comparison.stopped = "budget"
            return
        if not finished(values):
            raise QueuedRunError(
                f"run {thread} ended on a worker without an answer; run the same command again"
            )
        records[thread] = record_of(protocol, task, seed, thread, values)
        show_progress(comparison, protocol, len(records), len(runs))

    pending = []
    for task, _, thread in runs:
        values = await _values(comparison, protocol, thread)
        if settled(values):
            await read(thread, values)
        else:
            pending.append(job_of(comparison, protocol, task, thread))
    await submit(comparison.queue, pending)
    if pending and not comparison.quiet:
        print(
            f"{protocol.label}: waiting for {len(pending)} run(s) on the queue; "
            "`debate worker`s run them",
            file=sys.stderr,
        )
    failed = await wait(comparison.queue, [r.thread for r in pending], read)
    if failed:
        raise failure(failed, "run the same command again: it submits the failed runs again")
    return [records[thread] for _, _, thread in runs if thread in records]


async def submit_protocol(
    comparison: Comparison, protocol: Protocol, tasks: list[Task], seeds: int
) -> int:
    """Queue every unfinished (task, seed) run of ``protocol`` that is not queued yet; how many were queued."""
    runs = []
    for task in tasks:
        for seed in range(1, seeds + 1):
            thread = comparison.thread(protocol, task, seed)
            if not settled(await _values(comparison, protocol, thread)):
                runs.append(job_of(comparison, protocol, task, thread))
    return await submit(comparison.queue, runs)


def settled(values: dict[str, Any]) -> bool:
    """Return a run a worker need not run again: finished, or stopped by its own spend cap (the config's).

    With ``--queue`` no cap covers the comparison, so a run's cap is the config's, and running
    the run again would only meet it again: it is read, left out, and not submitted.
    """
    return finished(values) or values.get("stopped") == "budget"


def job_of(comparison: Comparison, protocol: Protocol, task: Task, thread: str) -> Run:
    """Return the job of one run: the task's question on the protocol's settings (and a sample's count of answers)."""
    settled = comparison.settled_for(protocol)
    return Run(
        thread,
        task.question,
        context_dict(settled.context),
        GRAPH_PROTOCOL[protocol.graph],
        protocol.samples if protocol.graph == "sample" else None,
        settled.settings,
    )


async def _values(comparison: Comparison, protocol: Protocol, thread: str) -> dict[str, Any]:
    graph = comparison.graphs[protocol.graph]
    return dict((await graph.aget_state({"configurable": {"thread_id": thread}})).values)
