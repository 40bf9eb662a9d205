"""What the viewer reads under ``langgraph dev``: the server's own threads, through its API.

The server keeps its threads in its own checkpointer (in memory for ``langgraph
dev``), which no database path reaches; its HTTP API does, and shows exactly
the threads Studio and the SDK made. ``ServerStore`` reads them with
``langgraph_sdk`` in-process (``get_client()`` with no URL talks to the server
it runs inside, without a socket or auth) and answers the pages as ``Store``
does. Whether a thread runs is the server's own word (``busy``), not a lock. A
step's replies as they land are read from the server's checkpointer itself,
reached in-process as the API reaches it (``runtime_checkpointer``).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

import httpx
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Interrupt
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from debate_engine.app.reports.standing import DONE, INTERRUPTED, RUNNING, WAITING, row_from
from debate_engine.app.viewer.debate_rows import as_shown
from debate_engine.app.viewer.reading import Loaded, newest_in, remember

if TYPE_CHECKING:
    from debate_engine.app.store.database import ListedStatus

LOG = logging.getLogger("debate.viewer")
PAGE = 200
"""Threads asked for per search: the list reads them all, page by page."""
UNKNOWN = (404, 422)
"""What the server answers for a thread it does not hold, or an id that is not a thread id."""


def state_word(thread: dict[str, Any], status: dict[str, Any]) -> str:
    """Return a thread's state in ``debate list``'s words, from its status record and the server's status."""
    if status.get("phase") == "done":
        return DONE
    if thread.get("status") == "interrupted" or thread.get("interrupts"):
        return WAITING
    return RUNNING if thread.get("status") == "busy" else INTERRUPTED


def server_row(thread: dict[str, Any]) -> dict[str, Any] | None:
    """Return a thread's row as ``debate list`` makes it; None for a thread that is no debate (yet)."""
    values = thread.get("values") or {}
    status = values.get("status") if isinstance(values, dict) else None
    if not isinstance(status, dict):
        return None
    record = cast("ListedStatus", {**status, "forked_from": values.get("forked_from")})
    row = row_from(str(thread["thread_id"]), record, state_word(thread, status))
    return {**row, "protocol": "roundtable" if values.get("turn_count") else "phases"}


def asked_in(state: dict[str, Any]) -> list[Interrupt]:
    """Return the questions a thread's state waits on, once each (a task lists those it asked)."""
    asked: dict[str, Interrupt] = {}
    for task in state.get("tasks") or []:
        for found in task.get("interrupts") or []:
            asked[found["id"]] = Interrupt(value=found.get("value"), id=found["id"])
    return list(asked.values())


def runtime_checkpointer() -> BaseCheckpointSaver | None:
    """Return the checkpointer of the server this runs in: the in-memory runtime's (``langgraph dev``), through
    ``langgraph_runtime``, the API's own interface to its runtime edition. None on another edition or with a
    checkpointer of the user's own (``LANGGRAPH_CHECKPOINTER``), where that one may not be the one used: the
    pages then read through the API alone and show a step's replies when the step ends."""
    if os.environ.get("LANGGRAPH_RUNTIME_EDITION") != "inmem" or os.environ.get(
        "LANGGRAPH_CHECKPOINTER"
    ):
        return None  # another runtime, or a checkpointer of the user's own: the runtime's may not be the one used
    try:
        from langgraph_runtime.checkpoint import Checkpointer  # start-up: only inside the server

        found = Checkpointer()
    except Exception as exc:  # another runtime edition, or not inside the server
        LOG.info("the viewer reads no checkpointer of the server: %s: %s", type(exc).__name__, exc)
        return None
    return found if isinstance(found, BaseCheckpointSaver) else None


class ServerStore:
    """The server's threads, read through its API; whole states are kept by checkpoint as ``Store`` keeps them."""

    def __init__(self, client: LangGraphClient | None = None) -> None:
        self._client = client
        self._states: OrderedDict[str, Loaded] = OrderedDict()
        self.saver: BaseCheckpointSaver | None = None
        """The server's own checkpointer, when this runs inside the server: a phase's finished calls are
        written there as they land (``in_flight``), which the API's thread state does not show."""

    async def open(self) -> None:
        """Make the in-process client and find the server's checkpointer, unless a client was given (a test's,
        or one with a URL: another process, whose checkpointer is out of reach)."""
        if self._client is None:
            self._client = get_client()
            self.saver = runtime_checkpointer()

    async def close(self) -> None:
        """Leave the client: it belongs to the server's process and closes with it."""

    @property
    def client(self) -> LangGraphClient:
        """Return the open client."""
        assert self._client is not None, "ServerStore.open() first"
        return self._client

    async def _state(self, thread: str) -> dict[str, Any] | None:
        """Return a thread's newest state from the server, or None when it holds no such thread."""
        try:
            return dict(await self.client.threads.get_state(thread))
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code in UNKNOWN:
                return None
            raise

    async def _threads(self) -> list[dict[str, Any]]:
        """Return every thread the server holds, with its values and status."""
        found: list[dict[str, Any]] = []
        while True:
            part = await self.client.threads.search(limit=PAGE, offset=len(found))
            found += [dict(t) for t in part]
            if len(part) < PAGE:
                return found

    async def rows(self) -> list[dict[str, Any]]:
        """Return every debate's row, newest first."""
        return as_shown([r for t in await self._threads() if (r := server_row(t))])

    async def newest(self, thread: str) -> tuple[str | None, ListedStatus | None, bool]:
        """Return a thread's newest version, its status record and whether it waits for answers.

        With the server's checkpointer at hand, read as ``Store`` reads it: a small read that counts the
        writes pending on the checkpoint, so that a page sees a reply land; else through the API.
        """
        if self.saver is not None:
            return await newest_in(self.saver, thread)
        state = await self._state(thread)
        if state is None or not state.get("checkpoint"):
            return None, None, False
        asked = asked_in(state)
        values = state.get("values") or {}
        record = values.get("status")
        if record and values.get("forked_from"):
            record = {**record, "forked_from": values["forked_from"]}
        return f"{state['checkpoint']['checkpoint_id']}+{len(asked)}", record, bool(asked)

    async def load(self, thread: str) -> Loaded | None:
        """Return a thread's whole state, kept until a newer checkpoint or question appears."""
        state = await self._state(thread)
        if state is None or not state.get("values"):
            return None
        asked = asked_in(state)
        version = f"{state['checkpoint']['checkpoint_id']}+{len(asked)}"
        kept = self._states.get(thread)
        if kept and kept.checkpoint == version:
            self._states.move_to_end(thread)
            return kept
        return remember(self._states, thread, Loaded(version, dict(state["values"]), asked))

    async def channels(self, thread: str) -> dict[str, Any]:
        """Return a thread's newest values (status, solution, stop)."""
        state = await self._state(thread)
        return dict((state or {}).get("values") or {})

    async def values(self, thread: str) -> dict[str, Any]:
        """Return a thread's whole state, not kept."""
        return await self.channels(thread)

    async def busy(self, thread: str) -> bool:
        """Return True while the server runs ``thread``."""
        try:
            return (await self.client.threads.get(thread)).get("status") == "busy"
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code in UNKNOWN:
                return False
            raise

    async def threads(self) -> list[str]:
        """Return every thread id."""
        return sorted(str(t["thread_id"]) for t in await self._threads())
