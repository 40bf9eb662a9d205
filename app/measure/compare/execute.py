"""Run a comparison's protocols on its tasks: one engine thread per run, skipped when already finished.

Every run is a thread ``compare:<comparison>:<protocol>:<task id>:<seed>`` in the
debate database, driven like ``debate run`` drives one debate; a finished thread
is read back, never run again, so the same command (or ``--resume``) after a
Ctrl-C continues where it stopped. Runs go concurrently, ``jobs`` at a time; with
``--queue`` they go to the workers instead (``queued.py``). The spend caps
(``--max-tokens``, ``--max-cost``) cover the whole comparison and hold each
request of each run (``gate.py``): a run is left out only when a request of
it was refused, and never scored (a later command with a larger cap resumes it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from debate_engine.app.cli.progress import Progress
from debate_engine.app.cli.runner import drive, ended
from debate_engine.app.measure.compare.gate import Refused, RunGate, SpendGate
from debate_engine.app.measure.compare.protocols import Protocol
from debate_engine.app.measure.compare.scored_runs import (
    finished as finished,  # re-exported: the comparison's callers read a run's record from here too
)
from debate_engine.app.measure.compare.scored_runs import record_of as record_of
from debate_engine.app.measure.compare.scored_runs import scored, spend_of
from debate_engine.app.measure.compare.tasks import Task
from debate_engine.config.settings import RunSettings
from debate_engine.config.settled import Settled, settle
from debate_engine.nodes.setup import begin

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
    """What stopped runs: the flag of the cap that refused a request, or ``budget`` for a run's own cap
    (the config file's)."""
    queue: Any = None
    """With ``--queue``: the opened job queue, whose ``debate worker``s run the runs instead of this process."""
    gate: SpendGate | None = field(default=None, init=False)
    """Under a cap: what every request of every run passes (``gate.py``)."""
    given: list[Settled] = field(default_factory=list)
    """The settings the command resolved where it started: a protocol whose runs have the same context takes them."""
    settled: dict[str, Settled] = field(default_factory=dict, init=False)
    """Each protocol's run settings by its label, resolved once for all of its runs."""

    def __post_init__(self) -> None:
        if self.capped:
            self.gate = SpendGate(
                {CAPS[key][0]: limit for key, limit in self.limits().items()}, self.spent
            )

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

    def settled_for(self, protocol: Protocol) -> Settled:
        """Return the settings every run of ``protocol`` starts with, resolved on its first run only.

        The comparison's caps are held request by request at its gate, never as a run's own cap.
        Keys were checked where the comparison started.
        """
        if protocol.label not in self.settled:
            context = dataclasses.replace(protocol.context, max_tokens=None, max_cost=None)
            known = (s for s in self.given if s.context == context)
            self.settled[protocol.label] = next(known, None) or settle(context, credentials=False)
        return self.settled[protocol.label]

    def left(self) -> dict[str, float]:
        """Return what each cap given has left, by its field."""
        return {key: limit - self.spent[CAPS[key][0]] for key, limit in self.limits().items()}

    def nearest_spent(self) -> str:
        """Return the flag of the cap with the smallest share left, the one that stops runs.

        ``budget`` when no cap covers the comparison: a run's own cap (the config's) stopped it.
        """
        limits, left = self.limits(), self.left()
        return CAPS[min(left, key=lambda key: left[key] / limits[key])][1] if left else "budget"


async def run_protocol(
    comparison: Comparison, protocol: Protocol, tasks: list[Task], seeds: int
) -> list[dict[str, Any]]:
    """Every scored (task, seed) run of ``protocol``, in task order.

    Runs a cap stopped or left unstarted are missing.
    """
    # Under a cap the runs go one at a time: each may spend all that is left, and none spends another's share.
    gate = asyncio.Semaphore(1 if comparison.capped else comparison.jobs)
    total, done = len(tasks) * seeds, [0]
    settings = comparison.settled_for(protocol).settings if comparison.capped else None

    async def one(task: Task, seed: int) -> dict[str, Any] | None:
        async with gate:
            record = await run_one(comparison, protocol, task, seed, settings)
        if record is not None:
            done[0] += 1
            show_progress(comparison, protocol, done[0], total)
        return record

    found = await asyncio.gather(*(one(t, s) for t in tasks for s in range(1, seeds + 1)))
    return [r for r in found if r is not None]


async def run_one(
    comparison: Comparison,
    protocol: Protocol,
    task: Task,
    seed: int,
    settings: RunSettings | None = None,
) -> dict[str, Any] | None:
    """One run: read back when scored, else start or resume it; None when a spend cap cut it.

    ``settings`` are the run's as the comparison's gate prices its requests (under a cap).
    """
    graph = comparison.graphs[protocol.graph]
    thread = comparison.thread(protocol, task, seed)
    config: Any = {"configurable": {"thread_id": thread}}
    snapshot = await graph.aget_state(config)
    if scored(snapshot.values) and not ended(snapshot):
        # killed after the judge's writes and before the last checkpoint: write it (no model is asked)
        snapshot = await drive(graph, None, config, None, Progress(quiet=True))
    if not scored(snapshot.values):
        return await _run(comparison, protocol, task, seed, snapshot.values, settings)
    record = record_of(protocol, task, seed, thread, snapshot.values)
    _charge(comparison, snapshot.values)
    return record


async def _run(
    comparison: Comparison,
    protocol: Protocol,
    task: Task,
    seed: int,
    values: dict[str, Any],
    settings: RunSettings | None,
) -> dict[str, Any] | None:
    """Start or resume a run, its requests at the comparison's gate; None when a cap cut it."""
    graph, thread = comparison.graphs[protocol.graph], comparison.thread(protocol, task, seed)
    config: Any = {"configurable": {"thread_id": thread}}
    settled = comparison.settled_for(protocol)
    before = dict(comparison.spent)
    fresh = afresh(values)
    if not fresh:  # resumed: what it spent before counts against the caps
        _charge(comparison, values)
    gate = comparison.gate
    if gate is not None and settings is not None and any(v <= 0 for v in gate.left().values()):
        comparison.stopped = comparison.nearest_spent()
        return None
    if fresh:
        await begin(graph, config, _intake(protocol, task, settled))
    if gate is not None and settings is not None:
        config["callbacks"] = [RunGate(gate, settings)]
    try:
        snapshot = await drive(graph, None, config, settled.context, Progress(quiet=True))
    except Refused as refused:
        # cut: what its finished requests spent is spent (the state lacks those of the phase it was cut in)
        _settle(comparison, before, (await graph.aget_state(config)).values, cut=True)
        comparison.stopped = refused.refusal.flag
        return None
    _settle(comparison, before, snapshot.values, cut=False)
    if not scored(snapshot.values):
        comparison.stopped = comparison.nearest_spent()  # a run's own cap (the config's) stopped it
        return None
    return record_of(protocol, task, seed, thread, snapshot.values)


def afresh(values: dict[str, Any]) -> bool:
    """Return whether a run starts afresh: it never began, or a cap stopped it.

    Resumed, a run a cap stopped would keep the spent cap fixed in its state; any other resumes with the
    settings it started with.
    """
    return not values or values.get("stopped") == "budget"


def _intake(protocol: Protocol, task: Task, settled: Settled) -> dict[str, Any]:
    """Return the first node's update that starts a run of ``protocol`` on ``task``."""
    if protocol.graph == "sample":
        return settled.intake(task.question, protocol="sample", samples=protocol.samples)
    return settled.intake(task.question)


def _charge(comparison: Comparison, values: dict[str, Any]) -> None:
    """Add a run's spend to the comparison's."""
    tokens, cost = spend_of(values)
    comparison.spent["tokens"] += tokens
    comparison.spent["cost"] += cost


def _settle(
    comparison: Comparison, before: dict[str, float], values: dict[str, Any], cut: bool
) -> None:
    """Count a run by its record once it ends: what it spent replaces what its requests settled at the gate.

    A run that was cut keeps the larger of the two: the requests that ended in the phase it was cut in are
    in no record yet.
    """
    tokens, cost = spend_of(values)
    for key, value in (("tokens", tokens), ("cost", cost)):
        recorded = before[key] + value
        comparison.spent[key] = max(comparison.spent[key], recorded) if cut else recorded


def show_progress(comparison: Comparison, protocol: Protocol, done: int, total: int) -> None:
    """``vote-5: task 12/300, 45123 tokens so far`` on stderr: live on a terminal, every tenth elsewhere."""
    if comparison.quiet:
        return
    line = f"{protocol.label}: task {done}/{total}, {int(comparison.spent['tokens'])} tokens so far"
    if sys.stderr.isatty():
        print(f"\r\033[K{line}", end="" if done < total else "\n", file=sys.stderr, flush=True)
    elif done == total or done % max(1, total // 10) == 0:
        print(line, file=sys.stderr)
