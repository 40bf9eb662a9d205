"""Where a debate stands and why it stopped, in the one set of words ``debate list`` and ``debate serve`` share.

A debate's state is one of ``STATES``, told from its newest checkpoint: its small
status record, whether a question waits on it, and whether a process runs it.
Beside the word, ``reason_of`` says why it stands so, from the same checkpoint:
the cap that stopped it (named with its limit when the settings are at hand), the
stop rule's reason, the call that failed and its error, Ctrl-C, the question a
person is asked, or the end of its last round. The command line and the viewer
both read these words from here, so they never disagree.

``debate --help`` imports this module through the command line: everything that
loads langgraph is imported where a debate is read, never at the top.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NotRequired

from typing_extensions import TypedDict

from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.words import counted

if TYPE_CHECKING:
    from debate_engine.app.reports.record import RunRecord
    from debate_engine.app.store.database import ListedStatus
    from debate_engine.config.settings import RunSettings
    from debate_engine.graph.state import ForkOrigin, Phase, Status
    from debate_engine.nodes.calls import Reply

DONE = "done"
RUNNING = "running"
WAITING = "waiting for a person"
INTERRUPTED = "interrupted"
STATES = (DONE, RUNNING, WAITING, INTERRUPTED)
"""Every state a debate is listed in, the same words in ``debate list`` and on every page of ``debate serve``."""
CANCELLED = ("CancelledError", "KeyboardInterrupt")
"""The errors a run ends with when Ctrl-C, a signal or a stop cancels it, not a failure."""
Write = tuple[str, str, Any]
"""One write pending on a checkpoint: the task's id, the channel and the value."""


class RateWait(TypedDict):
    """A running debate's wait for its model's rate limit, as another process reads it."""

    model: str
    seconds: float


class ListRow(TypedDict):
    """One debate as ``debate list`` shows it (``--json`` prints it whole); the viewer lists it too."""

    thread: str
    updated_at: float
    status: str
    """One of ``STATES``."""
    round: int
    rounds: int
    phase: Phase
    turns: int
    tokens: int
    cost: float
    cached_tokens: int
    saved: float
    forked_from: ForkOrigin | None
    problem: str
    partial: NotRequired[str]
    """Who is left and who is missing, with the error, when the debate went on without some agents."""
    waiting: NotRequired[RateWait]
    """The model a running debate waits on for its rate limit, and the seconds left (``debate list`` adds it)."""
    why: NotRequired[str]
    """Why it stands so (``reason_of``): last, so a script that reads the other keys reads what it always read."""


def state_word(phase: str, waiting: bool, running: bool) -> str:
    """Return a debate's state: done, else waiting for a person, else running, else interrupted."""
    if phase == "done":
        return DONE
    if waiting:
        return WAITING
    return RUNNING if running else INTERRUPTED


def where(status: Status | None) -> str:
    """Where a debate stands, in words."""
    if not status:
        return "its start"
    phase = "synthesis" if status["phase"] == "done" else status["phase"]
    return f"round {status['round']}/{status['rounds']}, after {phase}"


def reason_of(state: str, values: RunRecord, writes: Sequence[Write] = ()) -> str:
    """Return why a debate in ``state`` stands so, from its newest checkpoint.

    ``values`` are its whole values, or only its newest checkpoint's plain channels: the settings
    are a log of their own there, so a cap is named with its limit only when the whole values are
    at hand. ``writes`` are the writes pending on that checkpoint: the questions asked, the calls
    that failed, the error that ended the run.
    """
    channels, settings = values, values.get("settings")
    status = channels.get("status")
    if state == DONE:
        return finished_reason(channels, settings)
    if state == WAITING:
        return waiting_reason(writes)
    if state == RUNNING:
        return f"running: {where(status)}"
    if channels.get("stopped"):  # a cap stopped a sample's answers: the run ended unsettled
        return f"{finished_reason(channels, settings)}; it ended before the outcome was settled"
    return ended_reason(status, writes)


def finished_reason(channels: RunRecord, settings: RunSettings | None) -> str:
    """Return why a debate stopped taking turns: the cap it reached (with its limit), a stop rule, or its last round."""
    status: Status | dict[str, int] = channels.get("status") or {}
    given: dict[str, Any] = dict(settings or {})
    unit = (
        "turn" if given.get("protocol") == "roundtable" or channels.get("turn_count") else "round"
    )
    stopped = channels.get("stopped")
    stop: dict[str, Any] = dict(channels.get("stop_reason") or {})
    at = f"in {unit} {stop.get('round', status.get('round', 0))}"
    if stopped == "budget":
        return f"stopped early at the spend cap{_cap_limit(settings)} {at}"
    if stopped == "timeout":
        limit = given.get("round_timeout_s")
        return (
            f"stopped early at the time limit per {unit}{f' ({limit:g} s)' if limit else ''} {at}"
        )
    if stopped:
        return f"stopped early {at}: {stop.get('reason') or stopped}"
    return f"ran every {unit} it was given: {counted(status.get('rounds', 0), unit)}"


def _cap_limit(settings: RunSettings | None) -> str:
    """Return the spend cap's limits in words, in parentheses; empty when the settings are not at hand."""
    cap: dict[str, Any] = dict(settings["cap"] or {}) if settings and "cap" in settings else {}
    parts = [
        *([f"at most {cap['max_tokens']:,} tokens"] if cap.get("max_tokens") else []),
        *([f"at most ${cap['max_cost']:g}"] if cap.get("max_cost") else []),
    ]
    return f" ({' and '.join(parts)})" if parts else ""


def waiting_reason(writes: Sequence[Write]) -> str:
    """Return who is asked what: a seat's turn, or the agents' questions before the debate."""
    asked = [
        getattr(i, "value", i)
        for _, channel, value in writes
        if channel == "__interrupt__"
        for i in value
    ]
    turns = [q for q in asked if isinstance(q, dict) and q.get("type") == "human_turn"]
    if turns:
        return "waiting for " + "; ".join(f"{q.get('seat')}'s turn: {q.get('task')}" for q in turns)
    questions = sum(
        len(entry.get("questions") or [])
        for q in asked
        if isinstance(q, dict)
        for entry in q.get("questions") or []
    )
    if questions:
        return f"waiting for a person to answer {counted(questions, 'question')} the agents asked"
    return "waiting for a person to answer"


def ended_reason(status: Status | None, writes: Sequence[Write]) -> str:
    """Return why an unfinished debate no process runs stopped: Ctrl-C, a failed call, an error, or a lost process."""
    at = where(status)
    errors = [error_of(value) for _, channel, value in writes if channel == "__error__"]
    if not errors:
        return (
            f"the process running it ended at {at} without a word (killed, or the machine stopped)"
        )
    name, message = errors[-1]
    if name in CANCELLED:
        return f"Ctrl-C, a stop or a signal ended the run at {at}"
    failed = failed_calls(writes)
    if failed or name == "CallFailed":
        many = f" ({counted(len(failed), 'call')} failed)" if len(failed) > 1 else ""
        return f"a model call failed at {at}: {message}{many}"
    return (
        f"an error ended the run at {at}: {name}: {message}"
        if name
        else f"an error ended the run at {at}: {message}"
    )


def error_of(value: object) -> tuple[str, str]:
    """Return an error write's type name and message: LangGraph keeps the error's ``repr`` (``Name('message')``)."""
    if isinstance(value, BaseException):
        return type(value).__name__, str(value)
    text = str(value)
    found = re.fullmatch(r"(\w+)\((.*)\)", text, re.S)
    if not found:
        return "", text
    try:
        args = ast.literal_eval(f"({found[2]},)") if found[2] else ()
    except (ValueError, SyntaxError):
        return found[1], found[2]
    return found[1], "; ".join(str(a) for a in args)


def trouble_of(writes: Sequence[Write]) -> list[Write]:
    """Return the writes that say why a run ended: its error and its failed calls (a finished call's reply is not)."""
    return [w for w in writes if w[1] == "__error__" or (w[1] == "__return__" and _failed(w[2]))]


def _failed(value: object) -> bool:
    return isinstance(value, dict) and bool(value.get("failed"))


def failed_calls(writes: Sequence[Write]) -> list[Reply]:
    """Return the calls of the unfinished phase that failed, each with its attempts (kept as its task's return)."""
    return [value for _, channel, value in writes if channel == "__return__" and _failed(value)]


async def rows_of(db: str) -> list[ListRow]:
    """One row per thread, with why it stands so: its newest checkpoint only, never the whole debate."""
    from debate_engine.app.store.database import (  # start-up: no langgraph in --help
        open_checkpointer,
        status_of,
        thread_ids,
    )

    rows: list[ListRow] = []
    async with open_checkpointer(db) as saver:
        for thread in await thread_ids(saver):
            status, waiting = await status_of(saver, thread)
            if status:
                row = await row_of(db, thread, status, waiting)
                found = await saver.aget_tuple({"configurable": {"thread_id": thread}})
                channels = found.checkpoint.get("channel_values", {}) if found else {}
                writes = found.pending_writes or [] if found else []
                why = reason_of(row["status"], record_of(channels), writes)
                rows.append({**row, "why": why})
    return rows


async def row_of(db: str, thread: str, status: ListedStatus, waiting: bool) -> ListRow:
    """Return a thread's row from its newest status record: the viewer's list reads the same rows."""
    from debate_engine.app.store.database import athread_busy  # start-up: no langgraph in --help

    running = status["phase"] != "done" and not waiting and await athread_busy(db, thread)
    return row_from(thread, status, state_word(status["phase"], waiting, running))


def row_from(thread: str, status: ListedStatus, state: str) -> ListRow:
    """Return a thread's row from its status record, ``state`` already told (one of ``STATES``)."""
    row: ListRow = {
        "thread": thread,
        "updated_at": status["updated_at"],
        "status": state,
        "round": status["round"],
        "rounds": status["rounds"],
        "phase": status["phase"],
        "turns": status["turns"],
        "tokens": status.get("tokens", 0),
        "cost": status.get("cost", 0.0),
        "cached_tokens": status.get("cached_tokens", 0),
        "saved": status.get("saved", 0.0),
        "forked_from": status.get("forked_from"),
        "problem": status["problem"],
    }
    if status.get("partial"):
        row["partial"] = status["partial"]
    return row
