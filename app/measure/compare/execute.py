"""Run a comparison's protocols on its tasks: one engine thread per run, skipped when already finished.

Every run is a thread ``compare:<comparison>:<protocol>:<task id>:<seed>`` in the
debate database, driven like ``debate run`` drives one debate; a finished thread
is read back, never run again, so the same command (or ``--resume``) after a
Ctrl-C continues where it stopped. Runs go concurrently, ``jobs`` at a time; with
``--queue`` they go to the workers instead (``queued.py``). The spend caps
(``--max-tokens``, ``--max-cost``) cover the whole comparison: once one is
spent no run starts, and a run one stopped is never scored (a later command
with a larger cap starts it again).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from debate_engine.app.cli.progress import Progress
from debate_engine.app.cli.runner import drive, ended
from debate_engine.app.measure.compare.protocols import Protocol
from debate_engine.app.measure.compare.tasks import Task, is_correct, normalise
from debate_engine.config.context import context_dict
from debate_engine.config.file import ConfigError

CAPS = {"max_tokens": ("tokens", "--max-tokens"), "max_cost": ("cost", "--max-cost")}
"""The comparison's spend caps by their field (here and in a run's context): what each limits, and
its flag."""


@dataclass
class Comparison:
    """What every run of one comparison shares: its id, the graphs on one checkpointer, and what it has spent."""

    name: str
    graphs: dict[str, Any]
    jobs: int = 4
    max_cost: float | None = None
    """US dollars over the whole comparison (``--max-cost``)."""
    max_tokens: int | None = None
    """Prompt and completion tokens over the whole comparison (``--max-tokens``)."""
    quiet: bool = False
    spent: dict[str, float] = field(default_factory=lambda: {"tokens": 0, "cost": 0.0})
    """Everything this process's runs spent, the runs a cap stopped (and never scored) included."""
    stopped: str | None = None
    """What stopped runs: the flag of the cap nearest spent, or ``budget`` for a run's own cap (the
    config file's)."""
    queue: Any = None
    """With ``--queue``: the opened job queue, whose ``debate worker``s run the runs instead of this process."""

    def thread(self, protocol: Protocol, task: Task, seed: int) -> str:
        """Return the run's thread id: the same run always lands on the same thread."""
        return f"compare:{self.name}:{protocol.label}:{task.id}:{seed}"

    @property
    def capped(self) -> bool:
        """Whether a cap covers the whole comparison."""
        return bool(self.limits())

    def limits(self) -> dict[str, float]:
        """Return the caps given, by their field."""
        given = {"max_tokens": self.max_tokens, "max_cost": self.max_cost}
        return {key: float(limit) for key, limit in given.items() if limit is not None}

    def left(self) -> dict[str, float]:
        """Return what each cap given has left, by its field."""
        return {key: limit - self.spent[CAPS[key][0]] for key, limit in self.limits().items()}

    def nearest_spent(self) -> str:
        """Return the flag of the cap with the smallest share left, the one that stops runs.

        ``budget`` when no cap covers the comparison: a run's own cap (the config's) stopped it.
        """
        limits, left = self.limits(), self.left()
        return CAPS[min(left, key=lambda key: left[key] / limits[key])][1] if left else "budget"


def finished(values: dict[str, Any]) -> bool:
    """Return a run is done when its state holds a solution and its phase is ``done`` (never from ``next`` alone)."""
    return bool(values.get("solution")) and values.get("phase") == "done"


def scored(values: dict[str, Any]) -> bool:
    """Return a run counts when it finished and no spend cap cut it short.

    A debate the cap stopped still reaches its judge and finishes, but on what
    little was said (at worst the judge alone): scoring it would count the cap,
    not the protocol, mostly as wrong answers.
    """
    return finished(values) and values.get("stopped") != "budget"


async def run_protocol(
    comparison: Comparison, protocol: Protocol, tasks: list[Task], seeds: int
) -> list[dict[str, Any]]:
    """Every scored (task, seed) run of ``protocol``, in task order.

    Runs a cap stopped or left unstarted are missing.
    """
    # Under a cap the runs go one at a time: each may spend all that is left, and none spends another's share.
    gate = asyncio.Semaphore(1 if comparison.capped else comparison.jobs)
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


async def run_one(
    comparison: Comparison, protocol: Protocol, task: Task, seed: int
) -> dict[str, Any] | None:
    """One run: read back when scored, else start or resume it; None when a spend cap stopped it."""
    graph = comparison.graphs[protocol.graph]
    thread = comparison.thread(protocol, task, seed)
    config: Any = {"configurable": {"thread_id": thread}}
    snapshot = await graph.aget_state(config)
    if scored(snapshot.values) and not ended(snapshot):
        # killed after the judge's writes and before the last checkpoint: write it (no model is asked)
        snapshot = await drive(graph, None, config, None, Progress(quiet=True))
    if not scored(snapshot.values):
        context = _capped(comparison, protocol.context)
        if context is None:
            return None
        payload = _start(protocol, task, context, snapshot.values)
        try:
            snapshot = await drive(graph, payload, config, context, Progress(quiet=True))
        except ConfigError:  # what is left cannot pay even for the judge: the cap is spent
            comparison.stopped = comparison.nearest_spent()
            return None
        if not scored(snapshot.values):
            # the cap stopped it: what it spent is spent, but nothing is scored
            _charge(comparison, snapshot.values)
            comparison.stopped = comparison.nearest_spent()
            return None
    record = record_of(protocol, task, seed, thread, snapshot.values)
    _charge(comparison, snapshot.values)
    return record


def _start(
    protocol: Protocol, task: Task, context: Any, values: dict[str, Any]
) -> dict[str, Any] | None:
    """Return the input that starts a run afresh; None resumes it with the settings it started with.

    A run a cap stopped starts again: resumed, it would keep the spent cap fixed in its state.
    """
    if values and values.get("stopped") != "budget":
        return None
    payload: dict[str, Any] = {"problem": task.question, "context": context_dict(context)}
    if protocol.graph == "sample":
        payload["samples"] = protocol.samples
    return payload


def _charge(comparison: Comparison, values: dict[str, Any]) -> None:
    """Add a run's spend to the comparison's."""
    tokens, cost = spend_of(values)
    comparison.spent["tokens"] += tokens
    comparison.spent["cost"] += cost


def _capped(comparison: Comparison, context: Any) -> Any:
    """Return the run's settings capped by what the comparison's caps have left (None: no run starts now).

    Once a cap has stopped a run, none starts: each would get less than the one stopped, and a
    debate stopped at once still pays its judge for nothing that is scored.
    """
    left = comparison.left()
    if left and comparison.stopped:
        return None
    if any(value <= 0 for value in left.values()):
        comparison.stopped = comparison.nearest_spent()
        return None
    if "max_tokens" in left:
        context = dataclasses.replace(context, max_tokens=int(left["max_tokens"]))
    if "max_cost" in left:
        context = dataclasses.replace(context, max_cost=left["max_cost"])
    return context


def spend_of(values: dict[str, Any]) -> tuple[int, float]:
    """Return a run's tokens (prompt and completion) and dollars as billed (cache discounts included)."""
    total = (values.get("spend") or {}).get("total") or {}
    return int(total.get("input_tokens", 0) + total.get("output_tokens", 0)), float(
        total.get("cost", 0.0)
    )


def answer_of(values: dict[str, Any]) -> str | None:
    """Return the answer a run is scored by: the agents' plurality when they vote, else the judge's own.

    A run made before the judge stated an answer has no ``judge_answer``: its plurality stands in.
    """
    verdict = (values.get("solution") or {}).get("verdict") or {}
    if verdict.get("method") == "voting" or "judge_answer" not in verdict:
        return verdict.get("answer")
    return verdict["judge_answer"]


def record_of(
    protocol: Protocol, task: Task, seed: int, thread: str, values: dict[str, Any]
) -> dict[str, Any]:
    """Return what a finished run answered, each agent's first and final answer, and what it cost."""
    first: dict[str, str | None] = {}
    final: dict[str, str | None] = {}
    for turn in values.get("transcript", []):
        if turn.get("position"):
            first.setdefault(turn["speaker"], turn["position"].get("answer"))
            final[turn["speaker"]] = turn["position"].get("answer")
    tokens, cost = spend_of(values)
    status = values.get("status") or {}
    answers = {normalise(a, task.kind) for a in final.values()}
    agents = len((values.get("settings") or {}).get("agents") or [])
    answer = answer_of(values)
    return {
        "protocol": protocol.label,
        "task": task.id,
        "seed": seed,
        "thread": thread,
        "answer": answer,
        "correct": is_correct(task, answer),
        "tokens": tokens,
        "cost": cost,
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
