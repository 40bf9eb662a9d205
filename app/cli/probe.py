"""``debate probe``: measure what the memory keeps, for your own model, config and settings."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError
from debate_engine.app.cli.outputs import add_db, add_env_file, db_of, load_env_file
from debate_engine.app.cli.run import add_run_options
from debate_engine.app.cli.run_context import context_of_flags, problem_of
from debate_engine.app.store.thread_ids import check_thread_id

DESCRIPTION = """Run a debate with made-up facts planted in it, then measure where each fact survives: in each
agent's own perspective, in the summaries, in every prompt the debaters were sent (min, mean and the worst
prompt, per round, or per run of --every turns in the roundtable), and in the judge's last view; then quiz
each agent on the facts. It takes the run options of `debate run`, so a user can probe their own config.
With --db or --thread-id the probe's debate is stored like any other (`debate report THREAD`)."""


def register(sub: Any) -> None:
    probe = sub.add_parser(
        "probe",
        help="plant facts in a debate and measure where the memory keeps them",
        description=DESCRIPTION,
    )
    add_run_options(probe)
    probe.add_argument("--protocol", choices=["phase", "roundtable"], default="phase")
    probe.add_argument("--turns", type=int, help="roundtable: turns (default 200 without --config)")
    probe.add_argument(
        "--order", choices=["round-robin", "moderator"], help="roundtable: who speaks next"
    )
    probe.add_argument(
        "--summary-every", type=int, help="roundtable: fold the oldest turns in every N turns (50)"
    )
    probe.add_argument(
        "--every",
        type=int,
        default=10,
        help="roundtable: a row per N turns (default 10), and one "
        "for the first turn after each planting and each summary",
    )
    probe.add_argument("--facts", type=int, default=20, help="facts to plant (default 20)")
    probe.add_argument(
        "--plant",
        choices=["briefing", "replies"],
        default="briefing",
        help="briefing: a note every perspective includes (default); replies: the agents state them",
    )
    probe.add_argument(
        "--plant-rounds", default="1", help="rounds (or turns) that open with facts, e.g. 1,8"
    )
    probe.add_argument("--output", help="write the results as JSON here")
    probe.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_db(probe)
    add_env_file(probe)


def _plant_rounds(text: str) -> list[int]:
    try:
        rounds = sorted({int(r) for r in text.split(",") if r.strip()})
    except ValueError:
        raise InputError(
            f"--plant-rounds {text!r}: give round numbers separated by commas, e.g. 1,8"
        ) from None
    if not rounds or rounds[0] < 1:
        raise InputError(f"--plant-rounds {text!r}: rounds start at 1")
    return rounds


def _checked(args: argparse.Namespace) -> tuple[Any, list[Any], str]:
    """Return the run's settings with the facts planted, the facts and the problem, every mistake named before any call.

    The settings are resolved once, here, with the facts' notes in them: the probe's run starts on them.
    """
    from debate_engine.app.measure.probe.driver import PROBLEM, noted  # start-up: langgraph
    from debate_engine.app.measure.probe.facts import make_facts  # start-up: langgraph
    from debate_engine.config.settled import settle  # start-up: langchain-core

    if not 1 <= args.facts <= 200:
        raise InputError(f"--facts {args.facts}: use a number from 1 to 200")
    if args.every < 1:
        raise InputError(f"--every {args.every}: use a number of turns from 1")
    if args.clarify:
        raise InputError("--clarify: the probe cannot answer clarifying questions; leave it out")
    if args.thread_id is not None:  # the id of a new debate, as `debate run` checks it
        check_thread_id(args.thread_id)
    rounds = _plant_rounds(args.plant_rounds)
    if not args.config:  # the probe's own defaults; a config's rounds or turns win
        args.rounds = args.rounds if args.rounds is not None or args.protocol == "roundtable" else 6
        args.turns = args.turns if args.turns is not None or args.protocol != "roundtable" else 200
    problem = problem_of(args) if args.problem or args.problem_file else PROBLEM
    facts = make_facts(args.facts, rounds)
    settled = settle(noted(context_of_flags(args), facts, args.plant))
    settings = settled.settings
    last = (
        settings["roundtable"]["max_turns"]
        if settings.get("protocol") == "roundtable"
        else settings["rounds"]
    )
    if rounds[-1] > last:
        raise InputError(f"--plant-rounds: round {rounds[-1]} is after the last one ({last})")
    return settled, facts, problem


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.progress import Progress  # start-up: langgraph
    from debate_engine.app.cli.runner import run_until_signal  # start-up: langgraph
    from debate_engine.app.measure.probe.readings import render  # start-up: langgraph

    load_env_file(args.env_file)
    settled, facts, problem = _checked(args)
    progress = Progress(args.quiet)
    try:
        result = run_until_signal(_probe(args, settled, facts, problem, progress))
    finally:
        progress.close()
    sys.stdout.write(render(result))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return EXIT_OK


async def _probe(
    args: argparse.Namespace, settled: Any, facts: Any, problem: str, progress: Any
) -> dict[str, Any]:
    """Return the probe's debate: stored under ``--thread-id`` in ``--db`` when either is given, else in memory."""
    from debate_engine.app.measure.probe.driver import arun_probe  # start-up: langgraph
    from debate_engine.app.store.database import (  # start-up: langgraph's checkpointers
        athread_lock,
        open_checkpointer,
    )
    from debate_engine.graph.by_protocol import graph_for  # start-up: the run settings' schema

    options = {"emit": progress.show, "plant": args.plant, "every": args.every, "problem": problem}
    if not (args.db or args.thread_id):
        return await arun_probe(
            graph_for(settled.context, None),
            {"configurable": {"thread_id": "probe"}},
            settled,
            facts,
            **options,
        )
    thread, db = (
        args.thread_id or f"probe-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}",
        db_of(args),
    )
    async with open_checkpointer(db) as saver:
        graph, config = graph_for(settled.context, saver), {"configurable": {"thread_id": thread}}
        async with athread_lock(db, thread):
            if (await graph.aget_state(config)).values:
                raise InputError(
                    f"thread {thread} already holds a debate; give the probe another --thread-id"
                )
            if not args.quiet:
                print(f"debate {thread}", file=sys.stderr)
            return await arun_probe(graph, config, settled, facts, **options)
