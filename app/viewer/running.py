"""Debates the viewer starts, resumes, forks or answers: each runs in this process until it ends or asks.

A run holds its thread's lock (``athread_lock``) like ``debate run`` does, so
a debate another process runs is refused, and the list shows this one running.
It streams until the graph ends or pauses on a question (its calls' tokens
too: ``drafts``); the page then shows the question with a form. A failure is
kept as a message for the page, never a traceback. A run can be stopped from its
page: it is cancelled as Ctrl-C cancels ``debate run``, its finished calls kept,
and it resumes from there.

A person's answer is kept in the debate's database the moment it is sent
(``app/store/answers.py``), whether or not the run has paused yet: a question
shows as soon as its task asks it, while the phase's agents still work. Each
time the run pauses, it delivers the answers kept for the questions now
waiting (``Command(resume={id: answer})``) and goes on; an answer that comes
after the run has ended starts a new run that delivers it. A server stopped in
between delivers it when the debate is resumed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command, Interrupt

from debate_engine.app.store import answers as kept_answers
from debate_engine.app.store.database import (
    athread_lock,
    open_checkpointer,
    thread_busy,
)
from debate_engine.app.viewer.drafts import Drafts
from debate_engine.errors import DebateError, InputError
from debate_engine.graph.by_protocol import graph_for
from debate_engine.nodes.positions import POSITION_KINDS
from debate_engine.nodes.setup import begin
from debate_engine.providers.secrets import redact

LOG = logging.getLogger("debate.viewer")
INTERRUPT = "__interrupt__"
STREAMED: list[Any] = ["updates", "messages", "tasks"]
"""What a run of this server streams: its updates, its calls' tokens (``drafts``) and its tasks' ends."""
CONTROL_WRITES = frozenset({INTERRUPT, "__resume__", "__error__", "__error_source_node__"})
"""LangGraph's writes that say what happened to a task; any other write of a task is its output."""


def waiting(writes: Sequence[Any]) -> dict[str, Interrupt]:
    """Return the questions among a checkpoint's pending writes that still wait for an answer, by interrupt id.

    A question's write stays until its phase ends, answered or not. A person's question is asked by
    the task of their call and again by the phase that awaits it; once the answer reaches the task,
    the task writes its result (an output write), and the question no longer waits. A task asked
    again after a refused answer holds its newest question, unfinished.
    """
    finished = {task for task, channel, _ in writes if channel not in CONTROL_WRITES}
    asked: dict[str, Interrupt] = {}
    answered: set[str] = set()
    for task, channel, value in writes:
        if channel == INTERRUPT:
            items = value if isinstance(value, Sequence) else [value]
            if task in finished:
                answered.update(i.id for i in items)
            else:
                asked.update((i.id, i) for i in items)
    return {key: item for key, item in asked.items() if key not in answered}


def asked(writes: Sequence[Any]) -> set[str]:
    """Return the ids of every question among a checkpoint's pending writes, answered or not."""
    return {
        i.id
        for _, channel, value in writes
        if channel == INTERRUPT
        for i in (value if isinstance(value, Sequence) else [value])
    }


async def pending_writes(saver: BaseCheckpointSaver, thread: str) -> list[Any]:
    """Return the writes pending on a thread's newest checkpoint (none for an unknown thread)."""
    found = await saver.aget_tuple({"configurable": {"thread_id": thread}})
    return list(found.pending_writes or []) if found else []


@dataclass(frozen=True)
class Answering:
    """Where a debate's pending questions stand, for its answer form."""

    received: dict[str, kept_answers.Kept]
    """The answers kept for its questions, by interrupt id, until their phase ends."""
    elsewhere: bool
    """Another process runs the debate and asks its questions there (``debate run --human`` at a terminal)."""
    here: bool
    """This server runs the debate now: an answer sent is delivered when the run pauses."""
    acts: bool
    """This viewer may answer (the pages inside ``langgraph dev`` only read)."""
    stating: frozenset[str] = POSITION_KINDS
    """The kinds of turn that state a position: their form has the position's fields."""

    @property
    def untaken(self) -> set[str]:
        """Return the questions whose kept answer the debate has not taken yet."""
        return {key for key, kept in self.received.items() if not kept.taken}


class Runs:
    """The runs this server started, by thread; at most one per thread."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.failed: dict[str, str] = {}
        """The last failure of a thread's run, in words, until the thread runs again."""
        self.nudged: set[str] = set()
        """Threads sent an answer while this server ran them: delivered at the run's next pause, or by a new
        run when the run ended before it looked again."""
        self.started: dict[str, float] = {}
        """When this server last started (or resumed) each thread's run: its step began no earlier."""
        self.stopped: dict[str, float] = {}
        """When a page stopped a thread's run, until the thread runs again: the page says so."""
        self.stopping = False
        self.drafts = Drafts()
        """What the calls of this server's runs are writing now."""

    def running(self, thread: str) -> bool:
        """Return True while this server runs ``thread``."""
        task = self.tasks.get(thread)
        return task is not None and not task.done()

    def start(self, thread: str, intake: Any, context: Any, graph_kind: Any) -> None:
        """Run ``thread`` in the background: ``intake`` starts a new debate (``Settled.intake``), None resumes.

        A resume first delivers the answers kept for the questions the debate waits on.
        """
        self.failed.pop(thread, None)
        self.stopped.pop(thread, None)
        self.started[thread] = time.time()
        self._spawn(thread, self._drive(thread, intake, context, graph_kind), graph_kind)

    async def stop(self, thread: str) -> bool:
        """Stop this server's run of ``thread`` as Ctrl-C stops ``debate run``; return False when none runs.

        The run is cancelled: calls in flight are dropped, every finished call's reply stays in the
        checkpoint (a pending write), the thread's lock is let go, and a resume goes on from there.
        An answer sent meanwhile stays kept for that resume.
        """
        task = self.tasks.get(thread)
        if task is None or task.done():
            return False
        self.nudged.discard(thread)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self.stopped[thread] = time.time()
        return True

    async def receive(self, thread: str, answers: dict[str, Any], graph_kind: str) -> list[str]:
        """Keep ``answers`` (by interrupt id) for ``thread`` and see them delivered; return the ids kept.

        A question that has an answer kept already keeps that one. A run of this server delivers the
        answers at its next pause; with no run, one starts now.
        """
        kept = await asyncio.to_thread(kept_answers.receive, self.db, thread, answers)
        if kept and self.running(thread):
            self.nudged.add(thread)
        elif kept:
            self.start(thread, None, None, graph_kind)
        return kept

    async def kept(self, thread: str) -> dict[str, kept_answers.Kept]:
        """Return the answers kept for ``thread``'s questions, by interrupt id."""
        return await asyncio.to_thread(kept_answers.received, self.db, thread)

    def answering(self, thread: str) -> Answering:
        """Return where ``thread``'s questions stand, for the page being drawn (two small synchronous reads)."""
        if not self.db:
            return Answering({}, elsewhere=False, here=False, acts=False)
        here = self.running(thread)
        return Answering(
            kept_answers.received(self.db, thread),
            elsewhere=not here and thread_busy(self.db, thread),
            here=here,
            acts=True,
        )

    def _spawn(self, thread: str, work: Coroutine[Any, Any, None], graph_kind: Any) -> None:
        task = asyncio.get_running_loop().create_task(work, name=f"debate {thread}")
        self.tasks[thread] = task
        task.add_done_callback(lambda done: self._ended(thread, done, graph_kind))

    def _ended(self, thread: str, task: asyncio.Task[None], graph_kind: Any) -> None:
        """Keep the failure's message for the page; a stopped server's cancelled run is simply stopped.

        A run that ended just as an answer came (after its last look) is followed by one that delivers it.
        """
        self.drafts.end(thread)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            if thread in self.nudged and not self.stopping:
                self.start(thread, None, None, graph_kind)
            return
        if isinstance(exc, DebateError):
            text = exc.message()
        else:
            text = (
                f"the run stopped on an unexpected error ({type(exc).__name__}); resume it to retry"
            )
            LOG.error("debate %s: %s: %s", thread, type(exc).__name__, exc)
        self.failed[thread] = redact(text)

    async def _drive(self, thread: str, intake: Any, context: Any, graph_kind: Any) -> None:
        """Stream the graph under the thread's lock; at each pause deliver the answers kept, until none is due."""
        config: Any = {"configurable": {"thread_id": thread}}
        async with open_checkpointer(self.db) as saver, athread_lock(self.db, thread):
            graph = graph_for(context if context is not None else graph_kind, saver)
            given: set[str] = set()
            if intake is not None:  # settings resolved by the form: the first node resolves nothing
                # the form was sent twice, or a terminal started the thread first
                if (await graph.aget_state(config)).values:
                    raise InputError(f"thread {thread} already holds a debate; nothing was started")
                await begin(graph, config, intake)
            payload = await self._due(saver, thread, given)
            while True:
                async for mode, event in graph.astream(
                    payload,
                    config,
                    context=context,
                    stream_mode=STREAMED,
                    durability="sync",
                ):
                    self.drafts.take(thread, mode, event, graph.nodes)
                payload = await self._due(saver, thread, given)
                if payload is None:
                    return

    async def _due(
        self, saver: BaseCheckpointSaver, thread: str, given: set[str]
    ) -> Command[Any] | None:
        """Return the resume that delivers the answers kept for the questions waiting now; None when none is due.

        ``given`` holds what this run delivered already: a question asked again after its answer (the
        debate refused it) shows its error on the page instead, and that answer is dropped. An answer
        whose question no longer waits is marked taken; one whose question has left the checkpoint
        (its phase ended) is dropped.
        """
        self.nudged.discard(thread)
        writes = await pending_writes(saver, thread)
        now = waiting(writes)
        kept = await self.kept(thread)
        present = asked(writes)
        gone = [key for key in kept if key not in present or (key in given and key in now)]
        if gone:
            await asyncio.to_thread(kept_answers.forget, self.db, thread, gone)
        took = [key for key, k in kept.items() if key in present and key not in now and not k.taken]
        if took:
            await asyncio.to_thread(kept_answers.taken, self.db, thread, took)
        due = {key: k.answer for key, k in kept.items() if key in now and key not in given}
        given.update(due)
        return Command(resume=due) if due else None

    async def stop_all(self) -> None:
        """Cancel every run (the server is stopping): each keeps its finished turns and resumes later."""
        self.stopping = True
        live = [t for t in self.tasks.values() if not t.done()]
        for task in live:
            task.cancel()
        await asyncio.gather(*live, return_exceptions=True)
