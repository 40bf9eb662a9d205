"""``debate resume``: continue a stopped, failed or killed debate from its last checkpoint."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from debate_engine.app.errors import UserError
from debate_engine.app.outputs import add_db, add_outputs, check_outputs, db_of, finish, where


def register(sub: Any) -> None:
    resume = sub.add_parser("resume", help="continue an interrupted, failed or killed debate")
    resume.add_argument("thread")
    resume.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_outputs(resume)
    add_db(resume)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.runner import run_until_signal

    check_outputs(args)
    return run_until_signal(_resume(args))


async def _resume(args: argparse.Namespace) -> int:
    from debate_engine.app.persistence import open_checkpointer, thread_lock
    from debate_engine.app.progress import Progress
    from debate_engine.app.runner import drive
    from debate_engine.graph.builder import compile_debate

    db = db_of(args)
    async with open_checkpointer(db) as saver:
        graph = compile_debate(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": args.thread}}
        with thread_lock(db, args.thread):
            snapshot = await graph.aget_state(config)
            if not snapshot.values:
                raise UserError(f"no debate {args.thread!r} in {db}; see `debate list`")
            if snapshot.values.get("solution"):
                print(f"debate {args.thread} is already finished", file=sys.stderr)
                return finish(snapshot.values, args)
            print(f"resuming debate {args.thread} at {where(snapshot.values.get('status'))}", file=sys.stderr)
            snapshot = await drive(graph, None, config, None, Progress(args.quiet))
    return finish(snapshot.values, args)
