"""The work of ``debate fork``: check the request, write the forks, run them here or on the queue, show them."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import signal
import sys
import uuid
from typing import Any

from debate_engine.app.cli.exit_codes import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    InputError,
)
from debate_engine.app.cli.outputs import (
    check_outputs,
    db_of,
    finish,
    load_env_file,
    say,
)
from debate_engine.app.cli.progress import Progress
from debate_engine.app.cli.runner import (
    Stopped,
    drive,
    ended,
    run_until_signal,
)
from debate_engine.app.measure.compare.queued import QueuedRunError, Run, submit, wait
from debate_engine.app.reports.record import record_of
from debate_engine.app.store.database import athread_lock, is_postgres, open_checkpointer
from debate_engine.app.store.forking import (
    Changes,
    ensure_new,
    fork_point,
    fork_settings,
    fork_values,
    kept_line,
    origin_of,
    outcome_table,
    parse_variants,
    write_fork,
)
from debate_engine.app.store.thread_ids import check_thread_id
from debate_engine.graph.builder import compile_debate
from debate_engine.graph.by_protocol import graph_for, protocol_of
from debate_engine.providers.secrets import redact


def fork(args: argparse.Namespace) -> int:
    """Run ``debate fork``: one fork shown like a run, or ``--variants`` side by side, here or queued."""
    load_env_file(args.env_file)
    check_outputs(args)
    if args.round < 1:
        raise InputError(
            f"--round {args.round}: rounds count from 1; give the round whose end the fork starts from"
        )
    base = Changes(
        agents=args.agents,
        model=args.model,
        judge_model=args.judge_model,
        rounds=args.rounds,
        config=args.config,
    )
    if args.config is not None and not args.config.strip():
        raise InputError(
            "--config '': the path is empty; give a config file, or leave --config out to keep the "
            "original's"
        )
    _check_queue(args)
    if args.variants is None:
        return run_until_signal(_fork(args, [base]))
    if args.output or args.report:
        raise InputError(
            "--output and --report write one debate; with --variants, write each fork's with "
            "`debate show THREAD --output FILE` afterwards"
        )
    variants = [v.over(base) for v in parse_variants(args.variants)]
    if not args.queue:
        return run_until_signal(_fork(args, variants))

    try:
        return run_until_signal(_fork(args, variants))
    except Stopped as exc:
        return _stopped(args, exc.signum, _threads(args, len(variants)))


def _check_queue(args: argparse.Namespace) -> None:
    """``--queue`` spreads the variants' forks over the workers, which share a PostgreSQL database."""
    if args.queue and args.variants is None:
        raise InputError(
            "--queue hands --variants' forks to `debate worker`s; one fork runs here: add --variants, "
            "or leave --queue out"
        )
    if args.queue and not is_postgres(db_of(args)):
        raise InputError(
            "--queue hands the forks to `debate worker`s, which share a PostgreSQL database: pass --db "
            "postgresql://USER@HOST:PORT/DBNAME (or set DEBATE_DB); a SQLite file is one machine's, "
            "so leave --queue out to run the variants here"
        )


def _threads(args: argparse.Namespace, count: int) -> list[str]:
    """Return the forks' thread ids: ``--thread-id`` (numbered with variants), else new ones named after the original.

    With ``--queue`` the default is named after the variants too, so the same command finds its queued forks.
    A ``--thread-id`` is checked (``thread_ids``); an id named after the original keeps the original's shape.
    """
    tag = (
        hashlib.sha256(
            f"{args.variants}|{args.model}|{args.agents}|{args.judge_model}|{args.rounds}|"
            f"{args.config}".encode()
        ).hexdigest()[:6]
        if args.queue
        else uuid.uuid4().hex[:6]
    )
    given = args.thread_id is not None
    base = args.thread_id if given else f"{args.thread}-fork-r{args.round}-{tag}"
    threads = [base] if args.variants is None else [f"{base}-{n}" for n in range(1, count + 1)]
    return [check_thread_id(t) for t in threads] if given else threads


async def _fork(args: argparse.Namespace, variants: list[Any]) -> int:
    db = db_of(args)
    threads = _threads(args, len(variants))
    if args.thread in threads:
        raise InputError(
            f"--thread-id {args.thread}: that is the original; the fork needs a thread of its own"
        )
    async with open_checkpointer(db) as saver:
        reader = compile_debate(checkpointer=saver)  # either protocol's state reads the same
        async with athread_lock(db, args.thread):  # refused while another process runs it
            point = await fork_point(saver, reader, args.thread, args.round, db)
        original = dict(
            (await reader.aget_state({"configurable": {"thread_id": args.thread}})).values
        )
        origin = origin_of(point, args.thread, args.round)
        plans = [
            (
                thread,
                changes,
                fork_values(point, *fork_settings(point.values, changes, args.round), origin),
            )
            for thread, changes in zip(threads, variants, strict=True)
        ]  # every mistake found before a write
        graph = graph_for(protocol_of(point.values), saver)
        kept = await _kept(graph, plans) if args.queue else set()
        for thread in threads:
            if thread not in kept:
                await ensure_new(reader, thread)
        if args.variants is None:
            thread, changes, values = plans[0]
            return await _single(args, db, graph, point, thread, changes, values)
        for thread, changes, _ in plans:
            say(
                args,
                f"fork {thread} of {args.thread} at round {args.round}: {changes.label()}"
                + (" (written before; not written again)" if thread in kept else ""),
            )
        if args.queue:
            results = await _queued(args, db, graph, point, plans, kept)
        else:
            runs = [
                _run(db, graph, point, thread, values, quiet=True) for thread, _, values in plans
            ]
            results = await asyncio.gather(*runs, return_exceptions=True)
    return _table(args, original, plans, results)


async def _kept(graph: Any, plans: list[Any]) -> set[str]:
    """Return the forks a ``--queue`` run of the same command wrote before: same origin, same settings."""
    kept = set()
    for thread, _, values in plans:
        stored = (await graph.aget_state({"configurable": {"thread_id": thread}})).values
        if (
            stored
            and stored.get("forked_from") == values["forked_from"]
            and stored.get("context") == values["context"]
        ):
            kept.add(thread)
    return kept


async def _queued(
    args: argparse.Namespace, db: str, graph: Any, point: Any, plans: list[Any], kept: set[str]
) -> list[Any]:
    """Write the new forks, let the workers run every unfinished one, wait; each fork's values or failure."""
    from debate_engine.app.store.queue import open_queue  # start-up: procrastinate only for --queue

    async def state(thread: str) -> Any:
        return await graph.aget_state({"configurable": {"thread_id": thread}})

    async with open_queue(db) as (app, _):
        for thread, _, values in plans:
            if thread not in kept:
                async with athread_lock(db, thread):
                    await write_fork(graph, point, values, thread)
        left = [thread for thread, _, _ in plans if not ended(await state(thread))]
        await submit(app, [Run(thread, protocol=protocol_of(point.values)) for thread in left])
        say(args, f"{len(left)} fork(s) on the queue; `debate worker`s run them")
        done = [0]

        async def finished(thread: str) -> None:
            done[0] += 1
            say(args, f"fork {thread} finished ({done[0]}/{len(left)})")

        failed = await wait(app, left, finished)
    return [
        QueuedRunError(f"fork {thread} failed on a worker: {failed[thread]}")
        if thread in failed
        else dict((await state(thread)).values)
        for thread, _, _ in plans
    ]


def _stopped(args: argparse.Namespace, signum: int, threads: list[str]) -> int:
    """Ctrl-C (or SIGTERM) while waiting for the workers: the forks stay queued; say how to wait again."""
    word, code = (
        ("interrupted", EXIT_INTERRUPTED)
        if signum == signal.SIGINT
        else ("terminated", EXIT_TERMINATED)
    )
    print(
        redact(
            f"error: {word}; the forks {', '.join(threads)} stay in the queue and `debate worker`s go on "
            "running them.\nWait for them and print the table with the same command."
        ),
        file=sys.stderr,
    )
    return code


async def _run(
    db: str,
    graph: Any,
    point: Any,
    thread: str,
    values: dict[str, Any],
    quiet: bool,
    verbose: bool = False,
) -> dict[str, Any]:
    """Write one fork and drive it to its end, holding its thread; its final values.

    Its final line counts its own calls and time; the kept rounds' line follows, apart.
    """
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
        kept = kept_line(record_of(snapshot.values))
        if kept:
            print(kept, file=sys.stderr)
    return dict(snapshot.values)


async def _single(
    args: argparse.Namespace,
    db: str,
    graph: Any,
    point: Any,
    thread: str,
    changes: Any,
    values: dict[str, Any],
) -> int:
    """One fork, shown like a run: progress on stderr, the solution on stdout, the outputs asked for."""
    args.thread_id = thread  # what the output hints name
    say(args, f"fork {thread} of {args.thread} at round {args.round}: {changes.label()}")
    final = await _run(db, graph, point, thread, values, args.quiet, args.verbose)
    return finish(record_of(final), args)


def _table(
    args: argparse.Namespace, original: dict[str, Any], plans: list[Any], results: list[Any]
) -> int:
    """Print the variants' verdicts side by side; the first failure, if any, then decides the exit code."""
    done = [
        (changes.label(), thread, values)
        for (thread, changes, _), values in zip(plans, results, strict=True)
        if isinstance(values, dict)
    ]
    print(redact(outcome_table((args.thread, original), done)))
    failed = [
        (thread, error)
        for (thread, _, _), error in zip(plans, results, strict=True)
        if isinstance(error, BaseException)
    ]
    for thread, _ in failed:
        print(
            f"fork {thread} did not finish; continue it with `debate resume {thread}`",
            file=sys.stderr,
        )
    if failed:
        raise failed[0][1]
    return 0
