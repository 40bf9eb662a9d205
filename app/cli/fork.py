"""``debate fork``: a new debate from the end of a stored debate's round, with changed settings; or several at once."""

from __future__ import annotations

import argparse
from typing import Any

from debate_engine.app.cli.outputs import THREAD_HELP, add_db, add_outputs, add_progress


def register(sub: Any) -> None:
    fork = sub.add_parser(
        "fork",
        help="continue a stored debate from the end of a round in a new thread",
        description="Start a new debate that keeps a stored debate's transcript, summaries, "
        "positions and spend up to the end of round K, then goes on with changed settings. "
        "The original is left untouched.",
    )
    fork.add_argument("thread", metavar="THREAD", help=THREAD_HELP)
    fork.add_argument(
        "--round",
        type=int,
        required=True,
        metavar="K",
        help="fork at the end of round K (turn K in the roundtable)",
    )
    fork.add_argument(
        "--agents", help="the fork's agents: roles, or ids/roles of the config's agents"
    )
    fork.add_argument("--model", help="the fork's model for every agent and the judge")
    fork.add_argument("--judge-model", help="the fork's model for the judge only")
    fork.add_argument(
        "--rounds", type=int, help="rounds in all, the kept ones included (turns in the roundtable)"
    )
    fork.add_argument("--config", help="a JSON config file for the fork (default: the original's)")
    fork.add_argument(
        "--variants",
        help="one fork per ';'-separated variant of space-separated KEY=VALUE words "
        "(agents, model, judge-model, rounds, config), run at once, then their verdicts side by "
        "side: 'model=a;model=b;agents=x,y'",
    )
    fork.add_argument(
        "--thread-id",
        help="the fork's thread id (default: THREAD-fork-rK-XXXXXX); with --variants "
        "each fork is ID-1, ID-2, ...",
    )
    fork.add_argument(
        "--queue",
        action="store_true",
        help="with --variants on a PostgreSQL --db: write the forks "
        "here, let `debate worker`s run them, wait, then print the table; Ctrl-C leaves them queued "
        "and the same command waits again",
    )
    add_progress(fork)
    add_outputs(fork)
    add_db(fork)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.forker import fork  # start-up: no langgraph in --help

    return fork(args)
