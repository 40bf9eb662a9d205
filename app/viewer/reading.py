"""What the viewer reads from the debate database: the list's rows, one debate's state, its pending questions.

One checkpointer stays open for the server's life; every page reads through it.
A debate's whole state is loaded once per checkpoint and kept (a page of a
10,000-turn roundtable reloads nothing until a new turn lands), and the list's
rows are read once per thread's newest checkpoint: a poll of a running debate
reads only its small status record.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from debate_engine.app.reports.record import RunRecord, record_of
from debate_engine.app.reports.standing import RUNNING, Write, trouble_of
from debate_engine.app.store.database import (
    ListedStatus,
    athread_busy,
    open_checkpointer,
    status_of,
    thread_ids,
)
from debate_engine.app.viewer.debate_rows import all_rows, version
from debate_engine.graph.builder import compile_debate

KEPT_STATES = 8
"""Whole debates kept in memory: the pages being read, not the database."""


@dataclass(frozen=True)
class Loaded:
    """One debate as of one checkpoint: its values and the questions it waits on."""

    checkpoint: str
    """The version it was read at: the checkpoint's id and the writes pending on it."""
    values: dict[str, Any]
    interrupts: list[Any]
    """The questions pending on the newest checkpoint (read from its writes, whichever graph asked them)."""
    made: dict[str, Any] = field(default_factory=dict)
    """What pages made of this state (figures, the chart), kept with it: made once per version."""
    trouble: list[Write] = field(default_factory=list)
    """The writes pending on the checkpoint that say why the debate stopped: the error that ended its run and
    the calls that failed (``standing.reason_of`` reads them); empty where none is at hand."""

    @property
    def record(self) -> RunRecord:
        """Return the values as the typed record the reports and charts read."""
        return record_of(self.values)

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        """Return ``make()``, made once for this version of the debate."""
        if name not in self.made:
            self.made[name] = make()
        return self.made[name]


class Reader(Protocol):
    """What the pages read debates through: ``Store`` over a database, or the server's API (``server_reading``)."""

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def rows(self) -> list[dict[str, Any]]: ...
    async def newest(self, thread: str) -> tuple[str | None, ListedStatus | None, bool]: ...
    async def load(self, thread: str) -> Loaded | None: ...
    async def channels(self, thread: str) -> dict[str, Any]: ...
    async def values(self, thread: str) -> dict[str, Any]: ...
    async def busy(self, thread: str) -> bool: ...
    async def threads(self) -> list[str]: ...


def remember(kept: OrderedDict[str, Loaded], thread: str, loaded: Loaded) -> Loaded:
    """Keep ``loaded`` as ``thread``'s newest state, dropping the least recently read beyond ``KEPT_STATES``."""
    kept[thread] = loaded
    kept.move_to_end(thread)
    while len(kept) > KEPT_STATES:
        kept.popitem(last=False)
    return loaded


class Store:
    """The debate database, opened once; reads are cached by each thread's newest checkpoint."""

    def __init__(self, db: str) -> None:
        self.db = db
        self._stack = AsyncExitStack()
        self._saver: BaseCheckpointSaver | None = None
        self._graph: Any = None
        self._states: OrderedDict[str, Loaded] = OrderedDict()
        self._rows: list[dict[str, Any]] | None = None
        self._rows_key = ""

    async def open(self) -> None:
        """Open the checkpointer: a bad path or an unreachable server fails here, before any page."""
        self._saver = await self._stack.enter_async_context(open_checkpointer(self.db))
        self._graph = compile_debate(checkpointer=self._saver)

    async def close(self) -> None:
        """Close the checkpointer."""
        await self._stack.aclose()

    @property
    def graph(self) -> Any:
        """Return the debate graph on the open checkpointer (either protocol's state reads the same)."""
        return self._graph

    @property
    def saver(self) -> BaseCheckpointSaver:
        """Return the open checkpointer."""
        assert self._saver is not None, "Store.open() first"
        return self._saver

    async def newest(self, thread: str) -> tuple[str | None, ListedStatus | None, bool]:
        """Return a thread's newest version, its status record and whether it waits for answers.

        The version is the newest checkpoint's id and how many writes wait on it: a question
        (an interrupt) or a finished call is written there before the next checkpoint.
        """
        return await newest_in(self.saver, thread)

    async def load(self, thread: str) -> Loaded | None:
        """Return a thread's whole state, read again only when a newer checkpoint or write was made."""
        config: Any = {"configurable": {"thread_id": thread}}
        found = await self.saver.aget_tuple(config)
        if found is None:
            return None
        writes = found.pending_writes or []
        version = f"{found.config['configurable']['checkpoint_id']}+{len(writes)}"
        kept = self._states.get(thread)
        if kept and kept.checkpoint == version:
            self._states.move_to_end(thread)
            return kept
        snapshot = await self._graph.aget_state(config)
        if not snapshot.values:
            return None
        asked = {
            i.id: i for _, channel, value in writes if channel == "__interrupt__" for i in value
        }
        loaded = Loaded(
            version, dict(snapshot.values), list(asked.values()), trouble=trouble_of(writes)
        )
        return remember(self._states, thread, loaded)

    async def channels(self, thread: str) -> dict[str, Any]:
        """Return the plain channels of a thread's newest checkpoint (status, solution, stop)."""
        return await newest_channels(self.saver, thread)

    async def values(self, thread: str) -> dict[str, Any]:
        """Return a thread's whole state, not kept: for reading many small debates once (a comparison's runs)."""
        snapshot = await self._graph.aget_state({"configurable": {"thread_id": thread}})
        return dict(snapshot.values)

    async def busy(self, thread: str) -> bool:
        """Return True while a process (this one or another) runs ``thread``."""
        return await athread_busy(self.db, thread)

    async def rows(self) -> list[dict[str, Any]]:
        """Return every debate's row, newest first, read again only when the database changed."""
        key = await version(self.saver)
        if self._rows is None or key != self._rows_key:
            self._rows, self._rows_key = await all_rows(self.saver, self.db), key
        elif any(r["status"] == RUNNING for r in self._rows):
            await self._recheck_running(self._rows)
        return self._rows

    async def _recheck_running(self, rows: list[dict[str, Any]]) -> None:
        """Read the rows again when a run ended without a new checkpoint (killed): it is no longer running."""
        running = [r for r in rows if r["status"] == RUNNING]
        busy = await asyncio.gather(*(self.busy(r["thread"]) for r in running))
        if not all(busy):
            self._rows = await all_rows(self.saver, self.db)

    async def threads(self) -> list[str]:
        """Return every thread id."""
        return await thread_ids(self.saver)


async def newest_in(
    saver: BaseCheckpointSaver, thread: str
) -> tuple[str | None, ListedStatus | None, bool]:
    """Return a thread's newest version in ``saver`` (its checkpoint and how many writes wait on it), its status
    record and whether it waits for answers: one small read."""
    found = await saver.aget_tuple({"configurable": {"thread_id": thread}})
    if found is None:
        return None, None, False
    status, waiting = await status_of(saver, thread, found)
    written = len(found.pending_writes or [])
    return f"{found.config['configurable']['checkpoint_id']}+{written}", status, waiting


async def newest_channels(saver: BaseCheckpointSaver, thread: str) -> dict[str, Any]:
    """Return the plain channels of a thread's newest checkpoint (status, solution, stop): never the logs."""
    found = await saver.aget_tuple({"configurable": {"thread_id": thread}})
    return dict(found.checkpoint.get("channel_values", {})) if found else {}
