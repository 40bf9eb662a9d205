"""A ``--problems`` file for ``debate submit``: one debate per JSON line, each resolved once, here.

Each line is ``{"problem": "...", "thread_id": "optional", "rounds": 3, ...}`` where any ``Context`` field,
``config`` (a config file, relative to the file's folder) or ``protocol`` overrides the run options. Every
line is resolved as the debate will start on it, and its entry carries those settings to the worker; one
bad line names every bad line and queues nothing.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.app.store.thread_ids import ThreadIdError, check_thread_id

FIXED = ("problem", "thread_id", "config", "protocol")
"""Keys of a line besides the ``Context`` fields (``config`` is the config file, like ``--config``)."""
PROTOCOLS = {"phase": "phases", "roundtable": "roundtable", "escalate": "phases"}
"""``--protocol`` (and a line's ``"protocol"``) as the state names it: escalate is the phase debate with a vote."""
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
    settings: Any = None
    """The settings the entry resolved to, here: the worker starts a new thread on them (None: an id alone)."""


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
    from debate_engine.config.context import (  # start-up: langchain-core
        DEFAULT_VOTES,
        context_fields_of,
    )

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
    errors += _thread_problems(thread)
    # a line's own "protocol": "escalate" draws the default vote, as --protocol escalate does
    voted = {"votes": DEFAULT_VOTES} if item.get("protocol") == "escalate" else {}
    settings = {k: v for k, v in {**voted, **base, **fields}.items() if k in known}
    resolved = None
    if not errors:
        resolved, errors = resolve_line(settings, protocol)
    if errors:
        return None, [at + e for e in errors]
    assert isinstance(problem, str)  # checked above: a line without one has returned its errors
    return Entry(
        number,
        thread.strip() if thread else new_thread_id(),
        problem.strip(),
        compact(settings),
        protocol,
        resolved,
    ), []


def _thread_problems(thread: Any) -> list[str]:
    """Return what is wrong with a line's ``thread_id``: not a non-empty string, or an id no entry point takes."""
    if thread is None:
        return []
    if not isinstance(thread, str) or not thread.strip():
        return [f"thread_id: {thread!r} is not a non-empty string"]
    try:
        check_thread_id(thread.strip())
    except ThreadIdError as exc:
        return [str(exc)]
    return []


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


def resolve_line(fields: dict[str, Any], protocol: str | None) -> tuple[Any, list[str]]:
    """Resolve a line's settings, once, as the run will start on them; else the problems found, field first."""
    from debate_engine.config.context import context_for  # start-up: langchain-core
    from debate_engine.config.resolve import ConfigError  # start-up: langchain-core
    from debate_engine.config.settled import settle  # start-up: langchain-core
    from debate_engine.memory.budget import BudgetError  # start-up: langchain-core
    from debate_engine.providers.factory import ModelConfigError  # start-up: asyncio, urllib

    try:
        settled = settle(context_for(protocol or "phases", fields))
    except (ConfigError, ModelConfigError, BudgetError) as exc:
        return None, list(getattr(exc, "problems", None) or [str(exc)])
    if seated := settled.people:
        return None, [seated_refusal(seated)]
    return settled.settings, []


def seated_refusal(seated: list[str]) -> str:
    """Return why a person cannot sit at a queued debate."""
    return (
        f"agents: a person ({', '.join(seated)}) cannot sit at a queued debate, which a worker runs with no "
        "one to ask; run it with `debate run --human NAME`"
    )


def compact(fields: dict[str, Any]) -> dict[str, Any]:
    """Return the settings that differ from the defaults (a roundtable's include a ``Context``'s): what the job carries."""
    from debate_engine.config.context import RoundtableContext  # start-up: langchain-core

    defaults = dataclasses.asdict(RoundtableContext())
    return {k: v for k, v in fields.items() if v != defaults.get(k)}


def new_thread_id() -> str:
    """Return a new debate's thread id: its time, and a random tail so that two submitted at once differ."""
    return f"debate-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
