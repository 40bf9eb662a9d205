"""``debate resume``: continue a stopped, failed or killed debate from its last checkpoint."""

from __future__ import annotations

import argparse
from typing import Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.app.cli.outputs import (
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
from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.standing import where


def register(sub: Any) -> None:
    resume = sub.add_parser(
        "resume",
        help="continue an interrupted, failed or killed debate",
        description="Continue a stored debate from its last checkpoint, with the settings it "
        "started with.",
    )
    resume.add_argument("thread", metavar="THREAD", help=THREAD_HELP)
    add_progress(resume)
    add_outputs(resume)
    add_db(resume)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.runner import run_until_signal  # start-up: langgraph

    load_env_file(args.env_file)
    check_outputs(args)
    return run_until_signal(_resume(args))


async def _resume(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.progress import Progress  # start-up: langgraph
    from debate_engine.app.cli.runner import (  # start-up: langgraph
        drive,
        ended,
    )
    from debate_engine.app.store.database import (  # start-up: langgraph's checkpointers
        athread_lock,
        open_checkpointer,
    )
    from debate_engine.app.store.shared_limits import shared_limits  # start-up: langgraph
    from debate_engine.graph.builder import compile_debate  # start-up: langgraph
    from debate_engine.graph.by_protocol import graph_for, protocol_of  # start-up: langgraph

    db = db_of(args)
    async with open_checkpointer(db) as saver:
        graph = compile_debate(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": args.thread}}
        async with athread_lock(db, args.thread):
            snapshot = await graph.aget_state(config)
            if not snapshot.values:
                raise InputError(f"no debate {args.thread!r} in {db}; see `debate list`")
            # A process killed after the judge's writes and before the last checkpoint left a solution in the
            # values but a task in the checkpoint: going on writes that checkpoint, asking no model again.
            if snapshot.values.get("solution") and ended(snapshot):
                say(args, f"debate {args.thread} is already finished")
                return finish(record_of(snapshot.values), args)
            say(args, f"resuming debate {args.thread} at {where(snapshot.values.get('status'))}")
            graph = graph_for(
                protocol_of(snapshot.values), saver
            )  # the roundtable resumes on its own graph
            progress = Progress(args.quiet, args.verbose)
            progress.resume(snapshot.values)
            # the rate limits the run started with hold its resume too (they are in its settings)
            limits = shared_limits(db, args.thread, snapshot.values.get("settings") or {})
            try:
                async with limits:
                    snapshot = await drive(graph, None, config, None, progress)
            finally:
                progress.close()
    try:
        return finish(record_of(snapshot.values), args)
    finally:
        progress.finish(snapshot.values)
