"""One comparison from start to table: open the database, run the protocols in the order their sizes need,
and write what they found."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from debate_engine.app.compare import results
from debate_engine.app.compare.execute import Comparison, run_protocol
from debate_engine.app.compare.protocols import DEFAULT_VOTES, Protocol, protocol, votes_for
from debate_engine.app.compare.tasks import Task
from debate_engine.app.errors import EXIT_OK, UserError

ORDER = ("single", "debate", "debate-vote", "roundtable", "vote")
"""Run order: the vote is sized last, from what single and the debate spent."""


def comparison_id(tasks: list[Task], context: Any) -> str:
    """The comparison's id: its tasks and settings (not its protocols, seeds or cap, which may grow on resume)."""
    from dataclasses import asdict

    settings = {k: v for k, v in asdict(context).items() if k != "max_cost"}
    text = json.dumps([[t.id, t.question, t.answer, t.kind] for t in tasks], sort_keys=True) + json.dumps(
        settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def sample_agent(args: argparse.Namespace) -> str:
    """The agent single and vote ask: the first of ``--agents``, else (with no config) the generalist."""
    if args.agents:
        return args.agents.split(",")[0].strip()
    return "" if args.config else "generalist"


async def run_comparison(args: argparse.Namespace, names: list[str], budget: float | str | None,
                         tasks: list[Task], context: Any, roundtable: Any = None) -> int:
    """Run every protocol asked for on every task and seed, then print and write the figures.

    ``roundtable`` is the roundtable protocol's settings (``context`` with its turns), when it is compared.
    """
    from debate_engine.app.outputs import db_of
    from debate_engine.app.persistence import athread_lock, open_checkpointer, thread_ids
    from debate_engine.app.runner import graph_for

    name = comparison_id(tasks, context)
    db = db_of(args)
    async with open_checkpointer(db) as saver, athread_lock(db, f"compare:{name}"), _queue(args, db) as queue:
        if args.resume and not any(t.startswith(f"compare:{name}:") for t in await thread_ids(saver)):
            raise UserError(f"--resume: {db} holds no run of this comparison ({name}); check TASKS, the run "
                            "options and --db, or leave --resume out to start it")
        jobs = args.jobs or (1 if str(context.model).startswith("local") else 4)
        graphs = {key: graph_for(key, saver) for key in ("sample", "debate", "roundtable")}
        comparison = Comparison(name, graphs, jobs=jobs, max_cost=args.max_cost, quiet=args.quiet, queue=queue)
        _say(args, f"comparison {name}: {len(tasks)} tasks x {args.seeds} seeds, {', '.join(names)}; runs stored "
             f"as threads compare:{name}:*")
        if queue is not None:
            await _submit_early(args, comparison, names, tasks, context, roundtable)
        runs: dict[str, tuple[Protocol, list[dict[str, Any]]]] = {}
        for key in sorted(names, key=ORDER.index):
            votes = _votes(args, budget, runs, names) if key == "vote" else 1
            chosen = protocol(key, context, sample_agent(args), votes, roundtable)
            runs[key] = (chosen, await run_protocol(comparison, chosen, tasks, args.seeds))
    return _write(args, comparison, names, runs, len(tasks))


@asynccontextmanager
async def _queue(args: argparse.Namespace, db: str) -> AsyncIterator[Any]:
    """With ``--queue``, the opened job queue on ``db``; else None (the runs go in this process)."""
    if not args.queue:
        yield None
        return
    from debate_engine.app.queue import open_queue

    async with open_queue(db) as (app, _):
        yield app


async def _submit_early(args: argparse.Namespace, comparison: Comparison, names: list[str], tasks: list[Task],
                        context: Any, roundtable: Any) -> None:
    """Queue at once every protocol that needs no other's figures: the workers run them side by side.

    The vote waits when its k is sized from single's and the debate's tokens.
    """
    from debate_engine.app.compare.queued import submit_protocol

    ready = [key for key in names if key != "vote" or args.votes is not None]
    for key in sorted(ready, key=ORDER.index):
        chosen = protocol(key, context, sample_agent(args), args.votes or 1, roundtable)
        await submit_protocol(comparison, chosen, tasks, args.seeds)


def _votes(args: argparse.Namespace, budget: float | str | None,
           runs: dict[str, tuple[Protocol, list[dict[str, Any]]]], names: list[str]) -> int:
    """Vote's k: ``--votes``; else the budget (a number, or the debate's mean) over single's tokens per answer."""
    if args.votes is not None:
        return int(args.votes)
    debate = next((runs[d][1] for d in ("debate", "debate-vote") if d in runs), None)
    single = runs.get("single", (None, []))[1]
    target = budget if isinstance(budget, float) else _mean(debate) if debate else None
    if target and single:
        k = votes_for(target, _mean(single))
        _say(args, f"vote: {k} voters, sized to {target:,.0f} tokens per task")
        return k
    if budget is not None:
        raise UserError(f"--budget {args.budget}: sizing the vote needs single's tokens per answer"
                        + ("" if isinstance(budget, float) else " and a debate's mean") + "; add "
                        + ("single" if isinstance(budget, float) else "single and debate") + " to --protocols, or "
                        "give --votes K")
    _say(args, f"vote: {DEFAULT_VOTES} voters (no debate and single to size it from; --votes K to choose)")
    return DEFAULT_VOTES


def _mean(runs: list[dict[str, Any]] | None) -> float:
    return sum(r["tokens"] for r in runs or []) / max(1, len(runs or []))


def _write(args: argparse.Namespace, comparison: Comparison, names: list[str],
           runs: dict[str, tuple[Protocol, list[dict[str, Any]]]], n_tasks: int) -> int:
    """Print the table; write ``--md``, ``--output`` and ``--plot``."""
    from debate_engine.providers.secrets import redact

    baseline = runs["vote"][1] if "vote" in runs else None
    summaries = [results.summarise(key, runs[key][0].label, runs[key][1], None if key == "vote" else baseline)
                 for key in names]
    table = results.markdown(summaries, f"Comparison {comparison.name}: {n_tasks} tasks x {args.seeds} seeds")
    if args.seeds > 1:
        table += ("\nIntervals resample whole tasks (a task's seeds are not independent); McNemar pairs runs "
                  "(task and seed), so with several seeds its p is a little optimistic.\n")
    if comparison.stopped:
        table += f"\nStopped: the --max-cost of ${args.max_cost} was spent; rerun with a larger cap to finish.\n"
    print(table, end="")
    everything = {"comparison": comparison.name, "tasks": n_tasks, "seeds": args.seeds, "stopped": comparison.stopped,
                  "protocols": summaries, "runs": [r for key in names for r in runs[key][1]]}
    for target, text in ((args.md, lambda: table), (args.output, lambda: json.dumps(everything, indent=2)),
                         (args.plot, lambda: results.svg(summaries))):
        if target:
            Path(target).write_text(redact(text()), encoding="utf-8")
    return EXIT_OK


def _say(args: argparse.Namespace, line: str) -> None:
    if not args.quiet:
        print(line, file=sys.stderr)
