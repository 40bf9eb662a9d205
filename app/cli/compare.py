"""``debate compare``: run single, vote, debate and roundtable protocols on known-answer tasks and compare them."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from debate_engine.app.cli.exit_codes import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    InputError,
)
from debate_engine.app.cli.outputs import add_db, add_progress, check_outputs, db_of, load_env_file
from debate_engine.app.cli.run import add_run_options
from debate_engine.app.cli.run_context import settled_from_args
from debate_engine.app.measure.compare.protocols import (
    DEFAULT_VOTES,
    parse_budget,
    parse_protocols,
)
from debate_engine.providers.secrets import redact

TURNS_PER_AGENT = 3
"""The roundtable's turns when ``--turns`` is not given: each agent speaks three times."""
DROPPED = (
    "problem",
    "problem_file",
    "thread_id",
    "clarify",
    "max_questions",
    "max_tokens",
    "max_cost",
)
"""``debate run`` options a comparison does not take: it brings its own problems and its own spend
caps, which cover the whole comparison."""


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "compare",
        help="does debating pay? compare protocols on known-answer tasks",
        description="Run each protocol (single, vote, debate, debate-vote, roundtable) on every "
        "task and seed as real, resumable runs, and compare accuracy and cost. Ctrl-C stops it "
        "(exit 130); the same command, or --resume, continues it.",
    )
    cmd.add_argument(
        "tasks",
        metavar="TASKS",
        help="a JSONL file (id, question, answer, optional kind: number, "
        "choice with choices, exact) or builtin:arithmetic[:N]",
    )
    cmd.add_argument(
        "--protocols",
        default="single,vote,debate",
        help="comma-separated: single, vote, debate, debate-vote, debate-anon (the debate with "
        "anonymous critiques), roundtable, escalate (default single,vote,debate)",
    )
    cmd.add_argument(
        "--turns",
        type=int,
        help="roundtable: its turns, 1 to 10,000 (default 3 per agent); only "
        "with roundtable in --protocols",
    )
    _add_vote_size(cmd)
    cmd.add_argument(
        "--seeds", type=int, default=1, help="runs of each task per protocol, 1 to 100 (default 1)"
    )
    cmd.add_argument(
        "--jobs", type=int, help="runs at once, 1 to 256 (default 4; the embedded model: 1)"
    )
    _add_caps(cmd)
    cmd.add_argument(
        "--resume",
        action="store_true",
        help="continue a stopped comparison (Ctrl-C exits 130): "
        "finished runs are read back, never run again; refused when the database holds none of its "
        "runs (the same command without it also continues)",
    )
    cmd.add_argument(
        "--queue",
        action="store_true",
        help="PostgreSQL --db only: submit the runs to the job "
        "queue for `debate worker`s (on any machine) instead of running them here, wait for them, "
        "then print the table; Ctrl-C leaves them queued and the same command waits again",
    )
    cmd.add_argument("--output", help="write everything (figures and every run) as JSON here")
    cmd.add_argument("--md", help="write the Markdown table here too")
    cmd.add_argument(
        "--plot",
        help="write an SVG chart here: each protocol's accuracy with its interval, and its tokens per task",
    )
    scratch = argparse.ArgumentParser(add_help=False)
    add_run_options(scratch)
    for action in scratch._actions:
        if action.dest not in DROPPED:
            cmd._add_action(action)
    cmd.set_defaults(problem=None, problem_file=None, clarify=False)
    add_progress(cmd)
    add_db(cmd)


def _add_vote_size(cmd: argparse.ArgumentParser) -> None:
    """``--budget`` and ``--votes``: the two ways to size the vote."""
    cmd.add_argument(
        "--budget",
        help="tokens per task for vote: its k is the odd number nearest the budget over single's "
        "tokens per answer; auto: the debate's mean, in dollars as billed when the runs are priced, "
        "else in tokens (default auto when a debate and single are compared)",
    )
    cmd.add_argument(
        "--votes",
        type=int,
        help="vote's k, fixed (instead of --budget); an even k breaks a tie by a seeded draw",
    )
    cmd.add_argument(
        "--window",
        type=int,
        metavar="W",
        help="escalate: draw its k votes W at a time and stop at the first window that agrees "
        "(default: all k at once)",
    )


def _add_caps(cmd: argparse.ArgumentParser) -> None:
    """``--max-tokens`` and ``--max-cost``: both cap the whole comparison, never one run."""
    after = "each request of each run goes when its worst case fits what is left, "
    after += "and a run it refuses a request of is left out, never scored"
    cmd.add_argument(
        "--max-tokens",
        type=int,
        help=f"spend cap in prompt + completion tokens over the whole comparison: {after}",
    )
    cmd.add_argument(
        "--max-cost",
        type=float,
        help=f"spend cap in US dollars over the whole comparison: {after}",
    )


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.runner import Stopped, run_until_signal  # start-up: langgraph
    from debate_engine.app.measure.compare.tasks import load_tasks  # start-up: decimal, random

    load_env_file(args.env_file)
    names = parse_protocols(args.protocols)
    budget = parse_budget(args.budget)
    _check_numbers(args, budget)
    _check_budget(names, budget)
    if args.window is not None and "escalate" not in names:
        raise InputError(
            f"--window {args.window}: draws escalate's votes; add escalate to --protocols, or leave "
            "--window out"
        )
    _check_window(args, names)
    if args.turns is not None and "roundtable" not in names:
        raise InputError(
            f"--turns {args.turns}: only the roundtable takes turns; add roundtable to --protocols, "
            "or leave --turns out"
        )
    _check_queue(args)
    tasks = load_tasks(args.tasks)
    check_outputs(args)
    settled = settled_from_args(_runs(args, turns=None))
    if seated := settled.people:
        raise InputError(
            f"--agents: a person ({', '.join(seated)}) cannot sit at a comparison of hundreds of runs; "
            "compare models, and seat persons in `debate run --human NAME`"
        )
    roundtable = _roundtable(args, settled) if "roundtable" in names else None
    if args.max_cost is not None:  # a cost cap needs the price of every model the runs may call
        from debate_engine.app.measure.compare.gate import gated_settings  # start-up: langchain

        for run in (settled, roundtable):
            if run is not None:
                gated_settings(run.context, priced=True)
    from debate_engine.app.measure.compare.session import (  # start-up: langgraph
        comparison_id,
        run_comparison,
    )

    try:
        return run_until_signal(run_comparison(args, names, budget, tasks, settled, roundtable))
    except Stopped as exc:
        return _stopped(args, exc.signum, comparison_id(tasks, settled.context))


def _check_window(args: argparse.Namespace, names: list[str]) -> None:
    """Refuse a window escalate's vote cannot take, before any run: escalate votes with ``--votes``, else with the
    vote's k (sized from the other protocols' spend when ``vote`` is compared), else the default 3."""
    if args.window is None:
        return
    if args.votes is None and "vote" in names:
        raise InputError(
            f"--window {args.window}: the vote's k is sized from single's and the debate's spend, so no window "
            "can be checked against it before they run; give --votes K too"
        )
    k = args.votes or DEFAULT_VOTES
    if not 1 <= args.window <= k:
        raise InputError(f"--window {args.window}: give 1 to the vote's {k} answers at a time")


def _check_queue(args: argparse.Namespace) -> None:
    """``--queue`` needs the PostgreSQL database the workers share, and takes no setting only this process uses."""
    from debate_engine.app.store.database import is_postgres  # start-up: langgraph's checkpointers

    if not args.queue:
        return
    if not is_postgres(db_of(args)):
        raise InputError(
            "--queue hands the runs to `debate worker`s, which share a PostgreSQL database: pass --db "
            "postgresql://USER@HOST:PORT/DBNAME (or set DEBATE_DB); a SQLite file is one machine's, "
            "so leave --queue out to run the comparison here"
        )
    whole = "the workers run the runs at once, so no cap over the whole comparison can hold"
    checked = (
        ("--jobs", args.jobs, "each worker's --concurrency sets the runs at once"),
        ("--max-tokens", args.max_tokens, whole),
        ("--max-cost", args.max_cost, whole),
    )
    for flag, value, why in checked:
        if value is not None:
            raise InputError(
                f"{flag} {value} with --queue: {why}; leave {flag} out, or leave --queue out to run here"
            )


def _roundtable(args: argparse.Namespace, settled: Any) -> Any:
    """Return the roundtable's settings: the run's, with ``--turns`` (default 3 per agent), built as ``debate run`` does.

    Its settings are resolved here once, so that a mistake in them shows before any run.
    """
    agents = len(settled.settings["agents"])
    turns = args.turns if args.turns is not None else TURNS_PER_AGENT * agents
    changes = {"protocol": "roundtable", "turns": turns, "order": None, "summary_every": None}
    return settled_from_args(_runs(args, **changes))


def _runs(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    """Return the options as a run of the comparison takes them: ``--max-tokens`` and ``--max-cost`` cap the
    whole comparison, request by request at its gate, never a run (a run would have to pay its judge's
    whole share out of them, however little it spends)."""
    return argparse.Namespace(**{**vars(args), **changes, "max_tokens": None, "max_cost": None})


def _stopped(args: argparse.Namespace, signum: int, name: str) -> int:
    """Ctrl-C (or SIGTERM): say what is kept and how to continue; exit 130 (143)."""
    word, code = (
        ("interrupted", EXIT_INTERRUPTED)
        if signum == signal.SIGINT
        else ("terminated", EXIT_TERMINATED)
    )
    lead = "\r\033[K" if sys.stderr.isatty() else ""  # the live progress line ends first
    queued = (
        "; its queued runs stay in the queue and `debate worker`s go on running them.\nWait for them and "
        "print the table with the same command"
        if args.queue
        else ".\nContinue with the same command"
    )
    print(
        redact(
            f"{lead}error: {word}; every finished run of comparison {name} is saved in {db_of(args)}{queued}, "
            "or the same command with --resume: finished runs are read back, never run again."
        ),
        file=sys.stderr,
    )
    return code


def _check_budget(names: list[str], budget: float | str | None) -> None:
    """Refuse a budget without single's tokens per answer (and, for auto, a debate's): it sizes the vote from them."""
    debate = {"debate", "debate-vote"} & set(names)
    if (
        budget is None
        or "vote" not in names
        or ("single" in names and (debate or budget != "auto"))
    ):
        return
    need = "single" if budget != "auto" else "single and debate"
    raise InputError(
        f"--budget {budget}: sizing the vote needs single's tokens per answer"
        + ("" if budget != "auto" else " and a debate's mean")
        + f"; add {need} to --protocols, or give --votes K"
    )


def _check_numbers(args: argparse.Namespace, budget: float | str | None) -> None:
    """Every number in range, and no two flags that say the same thing differently."""
    from debate_engine.config.file import MAX_ROUNDS  # start-up: langchain-core

    if args.votes is not None and budget is not None:
        raise InputError("--votes and --budget both size the vote; give one of them")
    if args.votes is not None and not 1 <= args.votes <= 1000:
        raise InputError(f"--votes {args.votes}: give 1 to 1000 voters")
    if not 1 <= args.seeds <= 100:
        raise InputError(f"--seeds {args.seeds}: give 1 to 100 runs per task")
    if args.jobs is not None and not 1 <= args.jobs <= 256:
        raise InputError(f"--jobs {args.jobs}: give 1 to 256 runs at once")
    if args.turns is not None and not 1 <= args.turns <= MAX_ROUNDS:
        raise InputError(f"--turns {args.turns}: give 1 to {MAX_ROUNDS:,} turns")
    if args.max_cost is not None and not args.max_cost > 0:
        raise InputError(f"--max-cost {args.max_cost}: give a positive amount of US dollars")
    if args.max_tokens is not None and not args.max_tokens > 0:
        raise InputError(f"--max-tokens {args.max_tokens}: give a positive number of tokens")
