"""``debate submit``: queue debates for ``debate worker`` and print their thread ids (PostgreSQL only).

One problem (the argument or ``--problem-file``) or many (``--problems FILE``,
JSON Lines: ``{"problem": "...", "thread_id": "optional", "rounds": 3, ...}``
where any ``Context`` field, or ``config``, overrides the run options). Every
line is resolved as the debate's setup will resolve it before anything is
queued: one bad line queues nothing. ``--protocol roundtable`` (or a line's
``"protocol": "roundtable"``) queues roundtables. Submitting the thread of an
unfinished (failed, stopped) debate queues its continuation on the protocol it
was started with; naming the other protocol for it is refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError
from debate_engine.app.cli.outputs import add_db, db_of
from debate_engine.app.cli.problem_lines import (
    PROTOCOLS,
    ROUNDTABLE_FLAGS,
    Entry,
    compact,
    new_thread_id,
    parse_problems,
    seated_refusal,
)
from debate_engine.app.cli.run import add_run_options
from debate_engine.app.cli.run_context import context_fields, problem_of, settled_from_args
from debate_engine.app.store.thread_ids import check_thread_id

if TYPE_CHECKING:
    from debate_engine.app.store.database import ListedStatus


def register(sub: Any) -> None:
    submit = sub.add_parser(
        "submit", help="queue debates for `debate worker` and print their thread ids"
    )
    add_run_options(submit)
    submit.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help="phase (a new debate's default), roundtable, or escalate (vote first, debate on a "
        "split); a stored thread continues on its own protocol",
    )
    submit.add_argument(
        "--votes",
        dest="escalate_votes",
        type=int,
        metavar="K",
        help="escalate: voters, odd (default 3)",
    )
    submit.add_argument(
        "--window",
        dest="escalate_window",
        type=int,
        metavar="W",
        help="escalate: draw votes W at a time (default: all)",
    )
    submit.add_argument(
        "--turns", type=int, help="roundtable: most turns (1 to 10,000; default 100)"
    )
    submit.add_argument(
        "--order", choices=["round-robin", "moderator"], help="roundtable: who speaks next"
    )
    submit.add_argument(
        "--summary-every", type=int, help="roundtable: fold the oldest turns in every N turns (50)"
    )
    submit.add_argument(
        "--problems",
        metavar="FILE",
        help='JSON Lines, one debate a line: {"problem": "...", '
        '"thread_id": "optional", ...any run setting, e.g. "rounds": 3}',
    )
    add_db(submit)


def main(args: argparse.Namespace) -> int:
    import asyncio  # start-up: asyncio

    from debate_engine.app.store.queue import require_postgres  # start-up: procrastinate

    db = db_of(args)
    require_postgres(db, "submit")
    entries = entries_of(args)
    asyncio.run(_submit(db, entries))
    for entry in entries:
        print(entry.thread_id)
    print(
        f"queued {len(entries)} debate(s); `debate worker` runs them, `debate jobs --wait` follows them",
        file=sys.stderr,
    )
    return EXIT_OK


def entries_of(args: argparse.Namespace) -> list[Entry]:
    """Return what to queue, every setting checked; raises InputError or ConfigError (exit 2)."""
    protocol = PROTOCOLS[args.protocol] if args.protocol else None
    if args.problems:
        if args.problem or args.problem_file:
            raise InputError("give one PROBLEM (or --problem-file) or --problems FILE, not both")
        if args.thread_id:
            raise InputError(
                '--thread-id names one debate; with --problems put "thread_id" on each line'
            )
        base = {**_base(args, protocol), **_vote(args)}
        path = Path(args.problems)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(
                f"cannot read --problems {path}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        return parse_problems(text, base, path.resolve().parent, protocol)
    # A thread's id alone continues its stored debate; the check against the database comes later.
    problem = problem_of(args) if (args.problem or args.problem_file or not args.thread_id) else ""
    if (
        problem and args.thread_id is not None
    ):  # the id of a new debate; an id alone names a stored one
        check_thread_id(args.thread_id)
    # `debate run`'s: every setting checked, roundtable flags only with its protocol
    settled = settled_from_args(args)
    if seated := settled.people:
        raise InputError(seated_refusal(seated))
    return [
        Entry(
            0,
            args.thread_id or new_thread_id(),
            problem,
            compact(dataclasses.asdict(settled.context)),
            protocol,
            settled.settings if problem else None,
        )
    ]


def _vote(args: argparse.Namespace) -> dict[str, Any]:
    """Return the vote ``--protocol escalate`` gives every line (``--votes``, ``--window``); refused elsewhere."""
    from debate_engine.config.context import DEFAULT_VOTES  # start-up: langchain-core

    votes, window = args.escalate_votes, args.escalate_window
    if args.protocol != "escalate":
        if votes is not None or window is not None:
            raise InputError("--votes and --window belong to escalate; add --protocol escalate")
        return {}
    return {"votes": DEFAULT_VOTES if votes is None else votes, "window": window}


def _base(args: argparse.Namespace, protocol: str | None) -> dict[str, Any]:
    """Return the options every line of a file starts from (a roundtable's own only with ``--protocol roundtable``)."""
    given = {k: getattr(args, k) for k in ROUNDTABLE_FLAGS if getattr(args, k) is not None}
    if given and protocol != "roundtable":
        raise InputError(
            "--turns, --order and --summary-every belong to the roundtable; add --protocol roundtable"
        )
    return {**context_fields(args), **given}


async def _submit(db: str, entries: list[Entry]) -> None:
    from procrastinate.exceptions import AlreadyEnqueued  # start-up: procrastinate

    from debate_engine.app.store.queue import new_job, open_queue  # start-up: procrastinate

    async with open_queue(db) as (app, saver):
        await _check_threads(app, saver, entries)
        try:
            await app.job_manager.batch_defer_jobs_async(
                [
                    new_job(
                        e.thread_id,
                        e.problem,
                        e.context,
                        e.protocol or "phases",
                        settings=e.settings,
                    )
                    for e in entries
                ]
            )
        except AlreadyEnqueued:
            raise InputError(
                "another submit queued one of these threads just now; nothing was queued"
            ) from None


async def _check_threads(app: Any, saver: Any, entries: list[Entry]) -> None:
    """Refuse finished, queued or running threads, a new problem or another protocol on a stored thread.

    Nothing is queued then; else a stored thread's entry takes the protocol it was started with.
    """
    from debate_engine.app.store.database import status_of  # start-up: langgraph's checkpointers
    from debate_engine.app.store.queue import QUEUE  # start-up: procrastinate
    from debate_engine.config.resolve import ConfigError  # start-up: langchain-core
    from debate_engine.graph.builder import compile_debate  # start-up: langgraph
    from debate_engine.graph.by_protocol import protocol_of  # start-up: the run settings' schema

    reader = compile_debate(checkpointer=saver)  # reads either protocol's values: one state schema
    rows = await app.connector.execute_query_all_async(
        "SELECT lock, status::text AS status FROM procrastinate_jobs WHERE queue_name = %(queue)s "
        "AND lock = ANY(%(locks)s) AND status IN ('todo', 'doing')",
        queue=QUEUE,
        locks=[e.thread_id for e in entries],
    )
    busy = {r["lock"]: "queued" if r["status"] == "todo" else "running" for r in rows}
    problems = []
    for entry in entries:
        at = f"line {entry.line}: thread_id: " if entry.line else "--thread-id: "
        status, _ = await status_of(saver, entry.thread_id)
        config: Any = {"configurable": {"thread_id": entry.thread_id}}
        stored = protocol_of((await reader.aget_state(config)).values) if status else None
        problem = _refusal(entry, status, busy.get(entry.thread_id), stored)
        if problem:
            problems.append(at + problem)
        entry.protocol = stored or entry.protocol
    if problems:
        raise ConfigError([*problems, "nothing was queued"])


def _refusal(
    entry: Entry, status: ListedStatus | None, busy: str | None, stored: str | None
) -> str | None:
    """Why ``entry`` may not be queued, given its thread's job state and stored debate; None when it may."""
    thread = entry.thread_id
    if busy:
        return f"{thread} is already {busy}; see `debate jobs`"
    if status and status.get("phase") == "done":
        return f"{thread} already holds a finished debate; see `debate show`"
    if status and entry.problem and entry.problem != status.get("problem", "").strip():
        return f"{thread} holds another problem; submit its thread id alone to continue it, or use a new thread id"
    if not status and not entry.problem:
        return f"{thread} holds no debate; give its PROBLEM"
    if stored and entry.protocol and entry.protocol != stored:
        name = "a roundtable" if stored == "roundtable" else "a phase debate"
        return f"{thread} holds {name}, which continues on its own protocol; drop --protocol (or the line's)"
    return None
