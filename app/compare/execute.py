"""Run a comparison's protocols on its tasks: one engine thread per run, skipped when already finished.

Every run is a thread ``compare:<comparison>:<protocol>:<task id>:<seed>`` in the
debate database, driven like ``debate run`` drives one debate; a finished thread
is read back, never run again, so the same command (or ``--resume``) after a
Ctrl-C continues where it stopped. Runs go concurrently, ``jobs`` at a time; with
``--queue`` they go to the workers instead (``queued.py``). The spend cap covers the whole comparison: once it is spent, no run starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from debate_engine.app.compare.protocols import Protocol
from debate_engine.app.compare.tasks import Task, is_correct, normalise


@dataclass
class Comparison:
    """What every run of one comparison shares: its id, the graphs on one checkpointer, and what it has spent."""

    name: str
    graphs: dict[str, Any]
    jobs: int = 4
    max_cost: float | None = None
    quiet: bool = False
    spent: dict[str, float] = field(default_factory=lambda: {"tokens": 0, "cost": 0.0})
    stopped: str | None = None
    queue: Any = None
    """With ``--queue``: the opened job queue, whose ``debate worker``s run the runs instead of this process."""

    def thread(self, protocol: Protocol, task: Task, seed: int) -> str:
        """The run's thread id: the same run always lands on the same thread."""
        return f"compare:{self.name}:{protocol.label}:{task.id}:{seed}"


def finished(values: dict[str, Any]) -> bool:
    """A run is done when its state holds a solution and its phase is ``done`` (never from ``next`` alone)."""
    return bool(values.get("solution")) and values.get("phase") == "done"


async def run_protocol(comparison: Comparison, protocol: Protocol, tasks: list[Task],
                       seeds: int) -> list[dict[str, Any]]:
    """Every (task, seed) run of ``protocol``, in task order; runs the cap left unstarted are missing."""
    if comparison.queue is not None:
        from debate_engine.app.compare.queued import run_protocol_queued

        return await run_protocol_queued(comparison, protocol, tasks, seeds)
    # Under a cap the runs go one at a time: each may spend all that is left, and none spends another's share.
    gate = asyncio.Semaphore(1 if comparison.max_cost is not None else comparison.jobs)
    total, done = len(tasks) * seeds, [0]

    async def one(task: Task, seed: int) -> dict[str, Any] | None:
        async with gate:
            record = await run_one(comparison, protocol, task, seed)
        if record is not None:
            done[0] += 1
            show_progress(comparison, protocol, done[0], total)
        return record

    found = await asyncio.gather(*(one(t, s) for t in tasks for s in range(1, seeds + 1)))
    return [r for r in found if r is not None]


async def run_one(comparison: Comparison, protocol: Protocol, task: Task, seed: int) -> dict[str, Any] | None:
    """One run: read back when finished, else start or resume it; None when the spend cap stopped it first."""
    from debate_engine.app.progress import Progress
    from debate_engine.app.runner import drive
    from debate_engine.config.context import context_dict
    from debate_engine.config.file import ConfigError

    graph = comparison.graphs[protocol.graph]
    thread = comparison.thread(protocol, task, seed)
    config: Any = {"configurable": {"thread_id": thread}}
    snapshot = await graph.aget_state(config)
    if not finished(snapshot.values):
        context = _capped(comparison, protocol.context)
        if context is None:
            return None
        payload: dict[str, Any] | None = None  # an unfinished run resumes with the settings it started with ...
        if not snapshot.values or snapshot.values.get("stopped") == "budget":  # ... unless an earlier cap ended it
            payload = {"problem": task.question, "context": context_dict(context)}
            if protocol.graph == "sample":
                payload["samples"] = protocol.samples
        try:
            snapshot = await drive(graph, payload, config, context, Progress(quiet=True))
        except ConfigError:  # what is left cannot pay even for the judge: the cap is spent
            comparison.stopped = "max_cost"
            return None
        if not finished(snapshot.values):  # the cap stopped the answers: nothing to count, not a wrong answer
            comparison.stopped = "max_cost"
            return None
    record = record_of(protocol, task, seed, thread, snapshot.values)
    comparison.spent["tokens"] += record["tokens"]
    comparison.spent["cost"] += record["cost"]
    return record


def _capped(comparison: Comparison, context: Any) -> Any:
    """The run's settings with what the comparison's cap has left (None: nothing left, the comparison stops)."""
    if comparison.max_cost is None:
        return context
    left = comparison.max_cost - comparison.spent["cost"]
    if left <= 0:
        comparison.stopped = "max_cost"
        return None
    return dataclasses.replace(context, max_cost=left)


def record_of(protocol: Protocol, task: Task, seed: int, thread: str, values: dict[str, Any]) -> dict[str, Any]:
    """What a finished run answered, each agent's first and final answer, and what it cost."""
    verdict = (values.get("solution") or {}).get("verdict") or {}
    first: dict[str, str | None] = {}
    final: dict[str, str | None] = {}
    for turn in values.get("transcript", []):
        if turn.get("position"):
            first.setdefault(turn["speaker"], turn["position"].get("answer"))
            final[turn["speaker"]] = turn["position"].get("answer")
    total = (values.get("spend") or {}).get("total") or {}
    status = values.get("status") or {}
    answers = {normalise(a, task.kind) for a in final.values()}
    agents = len((values.get("settings") or {}).get("agents") or [])
    return {
        "protocol": protocol.label, "task": task.id, "seed": seed, "thread": thread,
        "answer": verdict.get("answer"), "correct": is_correct(task, verdict.get("answer")),
        "tokens": int(total.get("input_tokens", 0) + total.get("output_tokens", 0)),
        "cost": float(total.get("cost", 0.0)),
        "wall_s": round(float(status.get("updated_at", 0) - status.get("started_at", 0)), 3),
        "flips": [[is_correct(task, first[a]), is_correct(task, final[a])] for a in sorted(final)],
        "consensus": len(final) == agents > 0 and len(answers) == 1 and None not in answers,
    }


def show_progress(comparison: Comparison, protocol: Protocol, done: int, total: int) -> None:
    """``vote-5: task 12/300, 45123 tokens so far`` on stderr: live on a terminal, every tenth elsewhere."""
    if comparison.quiet:
        return
    line = f"{protocol.label}: task {done}/{total}, {int(comparison.spent['tokens'])} tokens so far"
    if sys.stderr.isatty():
        print(f"\r\033[K{line}", end="" if done < total else "\n", file=sys.stderr, flush=True)
    elif done == total or done % max(1, total // 10) == 0:
        print(line, file=sys.stderr)
