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
import json
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError
from debate_engine.app.cli.outputs import add_db, db_of
from debate_engine.app.cli.run import add_run_options
from debate_engine.app.cli.run_context import (
    checked_context,
    context_fields,
    context_from_args,
    people,
    problem_of,
)
from debate_engine.app.store.thread_ids import ThreadIdError, check_thread_id

if TYPE_CHECKING:
    from debate_engine.app.store.database import ListedStatus

FIXED = ("problem", "thread_id", "config", "protocol")
"""Keys of a line besides the ``Context`` fields (``config`` is the config file, like ``--config``)."""
PROTOCOLS = {"phase": "phases", "roundtable": "roundtable"}
"""``--protocol`` (and a line's ``"protocol"``) as the state names it."""
ROUNDTABLE_FLAGS = ("turns", "order", "summary_every")


@dataclass
class Entry:
    """One debate to queue; ``line`` is 0 for the command line's own problem."""

    line: int
    thread_id: str
    problem: str
    context: dict[str, Any]
    protocol: str | None = None
    """``phases`` or ``roundtable`` as asked; None: a phase debate if new, a stored thread's own protocol if not."""


def register(sub: Any) -> None:
    submit = sub.add_parser(
        "submit", help="queue debates for `debate worker` and print their thread ids"
    )
    add_run_options(submit)
    submit.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help="phase (a new debate's default) or "
        "roundtable; a stored thread continues on its own protocol",
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


def new_thread_id() -> str:
    return f"debate-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


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
        base = _base(args, protocol)
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
    context = context_from_args(
        args
    )  # `debate run`'s: every setting checked, roundtable flags only with its protocol
    return [
        Entry(
            0,
            args.thread_id or new_thread_id(),
            problem,
            _compact(dataclasses.asdict(context)),
            protocol,
        )
    ]


def _base(args: argparse.Namespace, protocol: str | None) -> dict[str, Any]:
    """Return the options every line of a file starts from (a roundtable's own only with ``--protocol roundtable``)."""
    given = {k: getattr(args, k) for k in ROUNDTABLE_FLAGS if getattr(args, k) is not None}
    if given and protocol != "roundtable":
        raise InputError(
            "--turns, --order and --summary-every belong to the roundtable; add --protocol roundtable"
        )
    return {**context_fields(args), **given}


def parse_problems(
    text: str, base: dict[str, Any], folder: Path, protocol: str | None = None
) -> list[Entry]:
    """Every line of a JSON Lines file as an entry; any bad line raises ConfigError naming them all.

    A line's ``"protocol"`` wins over ``protocol`` (the command line's).
    """
    from debate_engine.config.resolve import ConfigError  # start-up: langchain-core

    entries: list[Entry] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        entry, errors = parse_line(number, raw, base, folder, protocol)
        if entry and entry.thread_id in seen:
            errors = [
                f"line {number}: thread_id: {entry.thread_id!r} is also on line {seen[entry.thread_id]}"
            ]
        problems += errors
        if entry and not errors:
            seen[entry.thread_id] = number
            entries.append(entry)
    if problems:
        raise ConfigError([*problems, "nothing was queued"])
    if not entries:
        raise InputError(
            'the --problems file holds no debates; write one {"problem": "..."} per line'
        )
    return entries


def parse_line(
    number: int, raw: str, base: dict[str, Any], folder: Path, protocol: str | None = None
) -> tuple[Entry | None, list[str]]:
    """One line: its entry, or the problems found (each naming the line and the field)."""
    from debate_engine.config.context import context_fields_of  # start-up: langchain-core

    at = f"line {number}: "
    try:
        item = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, [f"{at}not valid JSON ({exc.msg} at column {exc.colno})"]
    if not isinstance(item, dict):
        return None, [f'{at}expected a JSON object such as {{"problem": "..."}}']
    if "protocol" in item and item["protocol"] not in PROTOCOLS:
        return None, [
            f"{at}protocol: {item['protocol']!r} is not one of {', '.join(sorted(PROTOCOLS))}"
        ]
    protocol = PROTOCOLS[item["protocol"]] if "protocol" in item else protocol
    known = context_fields_of(protocol)
    errors, fields = _line_fields(item, folder, known)
    problem, thread = item.get("problem"), item.get("thread_id")
    if not isinstance(problem, str) or not problem.strip():
        errors.insert(0, "problem: required, a non-empty string")
    if thread is not None and (not isinstance(thread, str) or not thread.strip()):
        errors.append(f"thread_id: {thread!r} is not a non-empty string")
    elif thread is not None:
        try:
            check_thread_id(thread.strip())
        except ThreadIdError as exc:
            errors.append(str(exc))
    settings = {k: v for k, v in {**base, **fields}.items() if k in known}
    if not errors:
        errors = _resolve_problems(settings, protocol)
    if errors:
        return None, [at + e for e in errors]
    assert isinstance(problem, str)  # checked above: a line without one has returned its errors
    return Entry(
        number,
        thread.strip() if thread else new_thread_id(),
        problem.strip(),
        _compact(settings),
        protocol,
    ), []


def _line_fields(
    item: dict[str, Any], folder: Path, known: set[str]
) -> tuple[list[str], dict[str, Any]]:
    """Return the line's settings as context fields, and the keys that are not settings."""
    errors = [
        f'{key}: a roundtable setting; add "protocol": "roundtable"'
        if key in ROUNDTABLE_FLAGS
        else f"{key}: unknown setting; use one of {', '.join(sorted(known | set(FIXED)))}"
        for key in item
        if key not in known and key not in FIXED
    ]
    fields = {k: v for k, v in item.items() if k in known}
    config = item.get("config", item.get("config_file"))
    if "config" in item and "config_file" in item:
        errors.append("config: give config or config_file, not both")
    elif config is not None:
        path = folder / config if isinstance(config, str) and config else None
        if path is None or not path.is_file():
            errors.append(
                f"config: {config!r} is not a file (a relative path starts at the --problems file's folder)"
            )
        else:
            fields["config_file"] = str(path.resolve())
    return errors, fields


def _resolve_problems(fields: dict[str, Any], protocol: str | None) -> list[str]:
    """Resolve the settings as the debate's setup will; the problems found, field first."""
    from debate_engine.config.context import context_for  # start-up: langchain-core
    from debate_engine.config.resolve import ConfigError  # start-up: langchain-core
    from debate_engine.memory.budget import BudgetError  # start-up: langchain-core
    from debate_engine.providers.factory import ModelConfigError  # start-up: asyncio, urllib

    try:
        context = checked_context(context_for(protocol or "phases", fields))
    except (ConfigError, ModelConfigError, BudgetError) as exc:
        return list(getattr(exc, "problems", None) or [str(exc)])
    seated = people(context)
    return (
        [
            f"agents: a person ({', '.join(seated)}) cannot sit at a queued debate, which a worker runs with no "
            "one to ask; run it with `debate run --human NAME`"
        ]
        if seated
        else []
    )


def _compact(fields: dict[str, Any]) -> dict[str, Any]:
    """Return the settings that differ from the defaults (a roundtable's include a ``Context``'s): what the job carries."""
    from debate_engine.config.context import RoundtableContext  # start-up: langchain-core

    defaults = dataclasses.asdict(RoundtableContext())
    return {k: v for k, v in fields.items() if v != defaults.get(k)}


async def _submit(db: str, entries: list[Entry]) -> None:
    from procrastinate.exceptions import AlreadyEnqueued  # start-up: procrastinate

    from debate_engine.app.store.queue import new_job, open_queue  # start-up: procrastinate

    async with open_queue(db) as (app, saver):
        await _check_threads(app, saver, entries)
        try:
            await app.job_manager.batch_defer_jobs_async(
                [
                    new_job(e.thread_id, e.problem, e.context, e.protocol or "phases")
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
    from debate_engine.app.cli.runner import protocol_of  # start-up: langgraph
    from debate_engine.app.store.database import status_of  # start-up: langgraph's checkpointers
    from debate_engine.app.store.queue import QUEUE  # start-up: procrastinate
    from debate_engine.config.resolve import ConfigError  # start-up: langchain-core
    from debate_engine.graph.builder import compile_debate  # start-up: langgraph

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
