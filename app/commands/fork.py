"""``debate fork``: a new debate from the end of a stored debate's round, with changed settings; or several at once."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from typing import Any

from debate_engine.app.errors import UserError
from debate_engine.app.outputs import (
    THREAD_HELP,
    add_db,
    add_outputs,
    add_progress,
    check_outputs,
    db_of,
    finish,
    load_env_file,
    say,
)


def register(sub: Any) -> None:
    fork = sub.add_parser("fork", help="continue a stored debate from the end of a round in a new thread",
                          description="Start a new debate that keeps a stored debate's transcript, summaries, "
                          "positions and spend up to the end of round K, then goes on with changed settings. "
                          "The original is left untouched.")
    fork.add_argument("thread", metavar="THREAD", help=THREAD_HELP)
    fork.add_argument("--round", type=int, required=True, metavar="K", help="fork at the end of round K "
                      "(turn K in the roundtable)")
    fork.add_argument("--agents", help="the fork's agents: roles, or ids/roles of the config's agents")
    fork.add_argument("--model", help="the fork's model for every agent and the judge")
    fork.add_argument("--judge-model", help="the fork's model for the judge only")
    fork.add_argument("--rounds", type=int, help="rounds in all, the kept ones included (turns in the roundtable)")
    fork.add_argument("--config", help="a JSON config file for the fork (default: the original's)")
    fork.add_argument("--variants", help="one fork per ';'-separated variant of space-separated KEY=VALUE words "
                      "(agents, model, judge-model, rounds, config), run at once, then their verdicts side by "
                      "side: 'model=a;model=b;agents=x,y'")
    fork.add_argument("--thread-id", help="the fork's thread id (default: THREAD-fork-rK-XXXXXX); with --variants "
                      "each fork is ID-1, ID-2, ...")
    add_progress(fork)
    add_outputs(fork)
    add_db(fork)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.fork import Changes, parse_variants
    from debate_engine.app.runner import run_until_signal

    load_env_file(args.env_file)
    check_outputs(args)
    if args.round < 1:
        raise UserError(f"--round {args.round}: rounds count from 1; give the round whose end the fork starts from")
    base = Changes(agents=args.agents, model=args.model, judge_model=args.judge_model, rounds=args.rounds,
                   config=args.config)
    if args.config is not None and not args.config.strip():
        raise UserError("--config '': the path is empty; give a config file, or leave --config out to keep the "
                        "original's")
    if args.variants is None:
        return run_until_signal(_fork(args, [base]))
    if args.output or args.report:
        raise UserError("--output and --report write one debate; with --variants, write each fork's with "
                        "`debate show THREAD --output FILE` afterwards")
    return run_until_signal(_fork(args, [v.over(base) for v in parse_variants(args.variants)]))


def _threads(args: argparse.Namespace, count: int) -> list[str]:
    """The forks' thread ids: ``--thread-id`` (numbered with variants), else new ones named after the original."""
    base = args.thread_id or f"{args.thread}-fork-r{args.round}-{uuid.uuid4().hex[:6]}"
    return [base] if args.variants is None else [f"{base}-{n}" for n in range(1, count + 1)]


async def _fork(args: argparse.Namespace, variants: list[Any]) -> int:
    from debate_engine.app.fork import ensure_new, fork_point, fork_settings, fork_values, origin_of
    from debate_engine.app.persistence import athread_lock, open_checkpointer
    from debate_engine.app.runner import graph_for, protocol_of
    from debate_engine.graph.builder import compile_debate

    db = db_of(args)
    threads = _threads(args, len(variants))
    if args.thread in threads:
        raise UserError(f"--thread-id {args.thread}: that is the original; the fork needs a thread of its own")
    async with open_checkpointer(db) as saver:
        reader = compile_debate(checkpointer=saver)  # either protocol's state reads the same
        async with athread_lock(db, args.thread):  # refused while another process runs it
            point = await fork_point(saver, reader, args.thread, args.round, db)
        original = dict((await reader.aget_state({"configurable": {"thread_id": args.thread}})).values)
        origin = origin_of(point, args.thread, args.round)
        plans = [(thread, changes, fork_values(point, *fork_settings(point.values, changes, args.round), origin))
                 for thread, changes in zip(threads, variants, strict=True)]  # every mistake found before a write
        for thread in threads:
            await ensure_new(reader, thread)
        graph = graph_for(protocol_of(point.values), saver)
        if args.variants is None:
            thread, changes, values = plans[0]
            return await _single(args, db, graph, point, thread, changes, values)
        runs = [_run(db, graph, point, thread, values, quiet=True) for thread, _, values in plans]
        for thread, changes, _ in plans:
            say(args, f"fork {thread} of {args.thread} at round {args.round}: {changes.label()}")
        results = await asyncio.gather(*runs, return_exceptions=True)
    return _table(args, original, plans, results)


async def _run(db: str, graph: Any, point: Any, thread: str, values: dict[str, Any], quiet: bool,
               verbose: bool = False) -> dict[str, Any]:
    """Write one fork and drive it to its end, holding its thread; its final values."""
    from debate_engine.app.fork import write_fork
    from debate_engine.app.persistence import athread_lock
    from debate_engine.app.progress import Progress
    from debate_engine.app.runner import drive

    async with athread_lock(db, thread):
        config = await write_fork(graph, point, values, thread)
        progress = Progress(quiet, verbose)
        progress.resume(values)
        try:
            snapshot = await drive(graph, None, config, None, progress)
        finally:
            progress.close()
    if not quiet:
        progress.finish(snapshot.values)
    return dict(snapshot.values)


async def _single(args: argparse.Namespace, db: str, graph: Any, point: Any, thread: str, changes: Any,
                  values: dict[str, Any]) -> int:
    """One fork, shown like a run: progress on stderr, the solution on stdout, the outputs asked for."""
    args.thread_id = thread  # what the output hints name
    say(args, f"fork {thread} of {args.thread} at round {args.round}: {changes.label()}")
    final = await _run(db, graph, point, thread, values, args.quiet, args.verbose)
    return finish(final, args)


def _table(args: argparse.Namespace, original: dict[str, Any], plans: list[Any], results: list[Any]) -> int:
    """Print the variants' verdicts side by side; the first failure, if any, then decides the exit code."""
    from debate_engine.app.fork import outcome_table
    from debate_engine.providers.secrets import redact

    done = [(changes.label(), thread, values) for (thread, changes, _), values in zip(plans, results, strict=True)
            if isinstance(values, dict)]
    print(redact(outcome_table((args.thread, original), done)))
    failed = [(thread, error) for (thread, _, _), error in zip(plans, results, strict=True)
              if isinstance(error, BaseException)]
    for thread, _ in failed:
        print(f"fork {thread} did not finish; continue it with `debate resume {thread}`", file=sys.stderr)
    if failed:
        raise failed[0][1]
    return 0
