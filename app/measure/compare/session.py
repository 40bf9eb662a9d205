"""One comparison from start to table: open the database, run the protocols in the order their sizes need,
and write what they found."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from debate_engine.app.cli.outputs import db_of
from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.gate import Refusal
from debate_engine.app.measure.compare.protocols import (
    DEFAULT_VOTES,
    ORDER,
    Protocol,
    protocol,
    votes_for,
)
from debate_engine.app.measure.compare.queued import run_protocol_queued, submit_protocol
from debate_engine.app.measure.compare.tasks import Task
from debate_engine.app.reports.charts import accuracy_svg
from debate_engine.app.store.database import athread_lock, open_checkpointer, thread_ids
from debate_engine.config.settings import RunSettings
from debate_engine.config.settled import Settled
from debate_engine.errors import EXIT_OK, InputError
from debate_engine.graph.by_protocol import graph_for
from debate_engine.providers.factory import provider_of
from debate_engine.providers.secrets import redact


def comparison_id(tasks: list[Task], context: Any) -> str:
    """Return the comparison's id: its tasks and settings.

    Not its protocols, seeds or caps, which may grow on resume.
    """
    settings = {k: v for k, v in asdict(context).items() if k != "max_cost"}
    # --max-tokens caps the comparison, as --max-cost does; the key stays, so earlier ids stand
    settings["max_tokens"] = None
    text = json.dumps(
        [[t.id, t.question, t.answer, t.kind] for t in tasks], sort_keys=True
    ) + json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def sample_agent(args: argparse.Namespace) -> str:
    """Return the agent single and vote ask: the first of ``--agents``, else (with no config) the generalist."""
    if args.agents:
        return args.agents.split(",")[0].strip()
    return "" if args.config else "generalist"


async def run_comparison(
    args: argparse.Namespace,
    names: list[str],
    budget: float | str | None,
    tasks: list[Task],
    settled: Settled,
    roundtable: Any = None,
) -> int:
    """Run every protocol asked for on every task and seed, then print and write the figures.

    ``settled`` are the runs' settings as the flags resolved them; ``roundtable`` the roundtable
    protocol's (``settled``'s with its turns), when it is compared.
    """
    given = [s for s in (settled, roundtable) if s is not None]
    context, roundtable = settled.context, roundtable and roundtable.context
    name = comparison_id(tasks, context)
    db = db_of(args)
    async with (
        open_checkpointer(db) as saver,
        athread_lock(db, f"compare:{name}"),
        _queue(args, db) as queue,
    ):
        if args.resume and not any(
            t.startswith(f"compare:{name}:") for t in await thread_ids(saver)
        ):
            raise InputError(
                f"--resume: {db} holds no run of this comparison ({name}); check TASKS, the run "
                "options and --db, or leave --resume out to start it"
            )
        graphs = {key: graph_for(key, saver) for key in ("sample", "debate", "roundtable")}
        comparison = Comparison(
            name,
            graphs,
            jobs=args.jobs or default_jobs(settled.settings),
            max_cost=args.max_cost,
            max_tokens=args.max_tokens,
            quiet=args.quiet,
            queue=queue,
            given=given,
        )
        _say(
            args,
            f"comparison {name}: {len(tasks)} tasks x {args.seeds} seeds, {', '.join(names)}; "
            f"runs stored as threads compare:{name}:*",
        )
        if queue is not None:
            await _submit_early(args, comparison, names, tasks, context, roundtable)
        runs, notes = await _run_all(args, comparison, names, budget, tasks, context, roundtable)
    return _write(args, comparison, names, runs, len(tasks), notes)


async def _run_all(
    args: argparse.Namespace,
    comparison: Comparison,
    names: list[str],
    budget: float | str | None,
    tasks: list[Task],
    context: Any,
    roundtable: Any,
) -> tuple[dict[str, tuple[Protocol, list[dict[str, Any]]]], list[str]]:
    """Each protocol's scored runs, in the order their sizes need, and how the vote was sized."""
    runs: dict[str, tuple[Protocol, list[dict[str, Any]]]] = {}
    notes: list[str] = []
    for key in sorted(names, key=ORDER.index):
        votes = 1
        if key == "vote":
            votes, sized = _votes(args, budget, runs)
            notes.append(sized)
        if key == "escalate":
            votes = runs["vote"][0].samples if "vote" in runs else args.votes or DEFAULT_VOTES
        chosen = protocol(key, context, sample_agent(args), votes, roundtable, args.window)
        run = (
            run_protocol if comparison.queue is None else run_protocol_queued
        )  # workers run a queued comparison
        runs[key] = (chosen, await run(comparison, chosen, tasks, args.seeds))
    return runs, notes


def default_jobs(settings: RunSettings) -> int:
    """Return the runs at once: 1 when any model the runs use is the embedded one, else 4.

    The embedded model answers one call at a time. The models are the resolved ones, so a model
    named by the config file or picked by default (no API key: the embedded model) counts as one
    given with ``--model``.
    """
    models = [
        m
        for p in (*settings["agents"], settings["judge"])
        for m in (p["model"], *p.get("fallback_models", []))
    ]
    return 1 if any(provider_of(m) == "local" for m in models if m) else 4


@asynccontextmanager
async def _queue(args: argparse.Namespace, db: str) -> AsyncIterator[Any]:
    """With ``--queue``, the opened job queue on ``db``; else None (the runs go in this process)."""
    if not args.queue:
        yield None
        return
    from debate_engine.app.store.queue import open_queue  # start-up: optional postgres extra

    async with open_queue(db) as (app, _):
        yield app


async def _submit_early(
    args: argparse.Namespace,
    comparison: Comparison,
    names: list[str],
    tasks: list[Task],
    context: Any,
    roundtable: Any,
) -> None:
    """Queue at once every protocol that needs no other's figures: the workers run them side by side.

    The vote waits when its k is sized from single's and the debate's tokens.
    """
    ready = [key for key in names if key not in ("vote", "escalate") or args.votes is not None]
    for key in sorted(ready, key=ORDER.index):
        chosen = protocol(
            key, context, sample_agent(args), args.votes or 1, roundtable, args.window
        )
        await submit_protocol(comparison, chosen, tasks, args.seeds)


def _votes(
    args: argparse.Namespace,
    budget: float | str | None,
    runs: dict[str, tuple[Protocol, list[dict[str, Any]]]],
) -> tuple[int, str]:
    """Vote's k, and the line that says how it was chosen: ``--votes``, else sized by ``--budget``.

    A number is tokens per task; ``auto`` matches the debate's mean, in dollars as billed (cache
    discounts included) when the runs were priced, else in tokens. A budget gives an odd k, so no
    voter is spent on a tie.
    """
    if args.votes is not None:
        return int(args.votes), f"vote-{args.votes}: --votes {args.votes}" + (
            "; a tie is broken by a draw seeded by the run" if args.votes % 2 == 0 else ""
        )
    debate = next((runs[d][1] for d in ("debate", "debate-vote") if d in runs), None)
    single = runs.get("single", (None, []))[1]
    if single and (isinstance(budget, float) or debate):
        k, sized = _sized(budget, single, debate)
        _say(args, sized)
        return k, sized
    if budget is not None:
        fixed = isinstance(budget, float)
        raise InputError(
            f"--budget {args.budget}: sizing the vote needs single's tokens per answer"
            + ("" if fixed else " and a debate's mean")
            + f"; add {'single' if fixed else 'single and debate'} to --protocols, or give --votes K"
        )
    _say(
        args,
        f"vote: {DEFAULT_VOTES} voters (no scored runs of single and a debate to size it from; "
        "--votes K to choose)",
    )
    return (
        DEFAULT_VOTES,
        f"vote-{DEFAULT_VOTES}: the default (no scored runs of single and a debate to size it "
        "from)",
    )


def _sized(
    budget: float | str | None, single: list[dict[str, Any]], debate: list[dict[str, Any]] | None
) -> tuple[int, str]:
    """Return the vote's k sized to the budget over single's spend per answer, and the line saying so."""
    if isinstance(budget, float):
        per_answer = _mean(single, "tokens")
        k = votes_for(budget, per_answer)
        said = f"{budget:,.0f} tokens per task ({per_answer:,.0f} per answer)"
        return k, f"vote-{k}: sized to --budget {said}"
    priced = _mean(single, "cost") > 0 and _mean(debate, "cost") > 0
    unit = "cost" if priced else "tokens"
    target, per_answer = _mean(debate, unit), _mean(single, unit)
    k = votes_for(target, per_answer)
    said = f"${target:,.4f}" if priced else f"{target:,.0f} tokens"
    how = "dollars as billed, cache discounts included" if priced else "tokens: no prices known"
    return k, f"vote-{k}: sized by --budget auto to the debate's {said} per task ({how})"


def _mean(runs: list[dict[str, Any]] | None, key: str) -> float:
    return sum(r[key] for r in runs or []) / max(1, len(runs or []))


def _write(
    args: argparse.Namespace,
    comparison: Comparison,
    names: list[str],
    runs: dict[str, tuple[Protocol, list[dict[str, Any]]]],
    n_tasks: int,
    notes: list[str],
) -> int:
    """Print the table; write ``--md``, ``--output`` and ``--plot``."""
    baseline = runs["vote"][1] if "vote" in runs else None
    planned = n_tasks * args.seeds
    summaries = [
        results.summarise(
            key, runs[key][0].label, runs[key][1], None if key == "vote" else baseline, planned
        )
        for key in names
    ]
    left_out = sum(s["left_out"] for s in summaries)
    if comparison.stopped or left_out:
        refused = comparison.gate.refused if comparison.gate else None
        notes.append(_stopped_line(args, comparison.stopped, left_out, refused))
    table = results.markdown(
        summaries, f"Comparison {comparison.name}: {n_tasks} tasks x {args.seeds} seeds", notes
    )
    print(table, end="")
    everything = {
        "comparison": comparison.name,
        "tasks": n_tasks,
        "seeds": args.seeds,
        "stopped": comparison.stopped,
        "left_out": left_out,
        "protocols": summaries,
        "runs": [r for key in names for r in runs[key][1]],
    }
    for target, text in (
        (args.md, lambda: table),
        (args.output, lambda: json.dumps(everything, indent=2)),
        (args.plot, lambda: accuracy_svg(summaries)),
    ):
        if target:
            Path(target).write_text(redact(text()), encoding="utf-8")
    return EXIT_OK


def _stopped_line(
    args: argparse.Namespace, stopped: str | None, left_out: int, refused: Refusal | None
) -> str:
    """Return what stopped the runs left out, named by its flag: what was spent and what the refused request
    needed; and how to finish them."""
    caps = {
        "--max-tokens": f"the --max-tokens of {args.max_tokens or 0:,} tokens",
        "--max-cost": f"the --max-cost of ${args.max_cost or 0:g}",
    }
    if stopped in caps:
        return (
            f"Stopped: {caps[stopped]} ran out{_refused(refused)}; {left_out} run(s) it cut were left "
            f"out, never scored. Rerun with a larger {stopped} to finish them."
        )
    return (
        f"Stopped: a run's own spend cap (the config file's budget) stopped {left_out} run(s); "
        "they were left out, never scored. Raise it, or cap the whole comparison with "
        "--max-tokens or --max-cost instead."
    )


def _refused(refused: Refusal | None) -> str:
    """Return ``: 39,210 tokens spent, and a request that may use up to 1,486 more found 790 left``."""
    if refused is None:
        return ""
    if refused.flag == "--max-tokens":
        spent, need = f"{refused.spent['tokens']:,.0f} tokens", f"{refused.need.tokens:,}"
        left = f"{refused.limits['tokens'] - refused.spent['tokens']:,.0f}"
    else:
        spent, need = f"${refused.spent['cost']:,.6f}", f"${refused.need.cost:,.6f}"
        left = f"${refused.limits['cost'] - refused.spent['cost']:,.6f}"
    return f": {spent} spent, and a request that may use up to {need} more found {left} left"


def _say(args: argparse.Namespace, line: str) -> None:
    if not args.quiet:
        print(line, file=sys.stderr)
