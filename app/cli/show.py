"""``debate show``: a stored debate's state, solution and report."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.app.cli.outputs import (
    THREAD_HELP,
    add_db,
    add_outputs,
    check_outputs,
    db_of,
    finish,
)
from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.standing import where
from debate_engine.app.reports.verdict_section import verdict_line
from debate_engine.providers.secrets import redact


def register(sub: Any) -> None:
    show = sub.add_parser(
        "show",
        help="show a stored debate",
        description="Print a stored debate's solution "
        "(stdout) and where it stands (stderr); write its state or report with --output/--report.",
    )
    show.add_argument("thread", metavar="THREAD", help=THREAD_HELP)
    add_outputs(show)
    add_db(show)


async def stored_values(args: argparse.Namespace) -> dict[str, Any]:
    """Return the whole state of ``args.thread``; a named error when there is none."""
    from debate_engine.app.store.database import (  # start-up: no langgraph in --help
        open_checkpointer,
    )
    from debate_engine.graph.builder import compile_debate  # start-up: no langgraph in --help

    async with open_checkpointer(db_of(args)) as saver:
        snapshot = await compile_debate(checkpointer=saver).aget_state(
            {"configurable": {"thread_id": args.thread}}
        )
    if not snapshot.values:
        raise InputError(f"no debate {args.thread!r} in {db_of(args)}; see `debate list`")
    return dict(snapshot.values)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.runner import run_until_signal  # start-up: no langgraph in --help

    check_outputs(args)
    values = record_of(run_until_signal(stored_values(args)))
    print(redact(f"thread {args.thread}: {where(values.get('status'))}"), file=sys.stderr)
    line = verdict_line(values)
    if line:
        print(redact(line), file=sys.stderr)
    return finish(values, args)
