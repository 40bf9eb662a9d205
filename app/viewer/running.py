"""Debates the viewer starts, resumes, forks or answers: each runs in this process until it ends or asks.

A run holds its thread's lock (``athread_lock``) like ``debate run`` does, so
a debate another process runs is refused, and the list shows this one running.
It streams until the graph ends or pauses on a question; the page then shows
the question with a form, and the answer starts the next stretch. A failure
is kept as a message for the page, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from langgraph.types import Command

from debate_engine.app.cli.runner import graph_for
from debate_engine.app.store.database import athread_lock, open_checkpointer
from debate_engine.errors import DebateError
from debate_engine.providers.secrets import redact

LOG = logging.getLogger("debate.viewer")


class Runs:
    """The runs this server started, by thread; at most one per thread."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.failed: dict[str, str] = {}
        """The last failure of a thread's run, in words, until the thread runs again."""

    def running(self, thread: str) -> bool:
        """Return True while this server runs ``thread``."""
        task = self.tasks.get(thread)
        return task is not None and not task.done()

    def start(self, thread: str, payload: Any, context: Any, graph_kind: Any) -> None:
        """Run ``thread`` in the background: ``payload`` is the input, a ``Command`` to resume, or None."""
        self.failed.pop(thread, None)
        self._spawn(thread, self._drive(thread, payload, context, graph_kind))

    def answer(self, thread: str, answers: dict[str, Any], graph_kind: str) -> None:
        """Resume ``thread`` with the answers to its pending questions, by interrupt id."""
        self.start(thread, Command(resume=answers), None, graph_kind)

    def _spawn(self, thread: str, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work, name=f"debate {thread}")
        self.tasks[thread] = task
        task.add_done_callback(lambda done: self._ended(thread, done))

    def _ended(self, thread: str, task: asyncio.Task[None]) -> None:
        """Keep the failure's message for the page; a stopped server's cancelled run is simply stopped."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if isinstance(exc, DebateError):
            text = exc.message()
        else:
            text = (
                f"the run stopped on an unexpected error ({type(exc).__name__}); resume it to retry"
            )
            LOG.error("debate %s: %s: %s", thread, type(exc).__name__, exc)
        self.failed[thread] = redact(text)

    async def _drive(self, thread: str, payload: Any, context: Any, graph_kind: Any) -> None:
        """Stream the graph until it ends or pauses on a question, under the thread's lock."""
        config: Any = {"configurable": {"thread_id": thread}}
        async with open_checkpointer(self.db) as saver, athread_lock(self.db, thread):
            graph = graph_for(context if context is not None else graph_kind, saver)
            async for _ in graph.astream(
                payload, config, context=context, stream_mode="updates", durability="sync"
            ):
                pass

    async def stop_all(self) -> None:
        """Cancel every run (the server is stopping): each keeps its finished turns and resumes later."""
        live = [t for t in self.tasks.values() if not t.done()]
        for task in live:
            task.cancel()
        await asyncio.gather(*live, return_exceptions=True)
