"""Drive a debate from the command line: stream it, answer its questions, stop cleanly on a signal.

The graph runs async on the async checkpointer. SIGINT and SIGTERM cancel
the run: in-flight model calls are cancelled, every finished call is already
in the checkpoint, and the debate resumes from there.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Interrupt

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.app.cli.person import answer_turn, is_person_question
from debate_engine.app.cli.progress import Progress
from debate_engine.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, DebateError

T = TypeVar("T")


class Stopped(DebateError):
    """The run was stopped by a signal; ``signal`` names it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def code(self) -> int:
        """130 for Ctrl-C (SIGINT), 143 for SIGTERM, as a shell reports them."""
        return EXIT_INTERRUPTED if self.signum == signal.SIGINT else EXIT_TERMINATED

    def message(self) -> str:
        """``interrupted`` or ``terminated``."""
        return "interrupted" if self.signum == signal.SIGINT else "terminated"


class _Executor(ThreadPoolExecutor):
    """The loop's thread pool; once the run is stopped, closing the loop no longer waits for its threads.

    A summary is made in a thread: cancelling the run cannot stop its request, and
    waiting for it would hold a Ctrl-C for as long as the model takes to answer.
    Its result would not be saved anyway; the process exits without it.
    """

    abandon = False

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(
            wait=wait and not self.abandon, cancel_futures=cancel_futures or self.abandon
        )


def run_until_signal(work: Awaitable[T]) -> T:
    """Run ``work``; SIGINT or SIGTERM cancel it and raise :class:`Stopped`."""

    async def main() -> T:
        loop = asyncio.get_running_loop()
        executor = _Executor()
        loop.set_default_executor(executor)
        job = asyncio.ensure_future(work)
        got: list[int] = []

        def stop(signum: int) -> None:
            got.append(signum)
            executor.abandon = True
            job.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, signum)
        try:
            return await job
        except asyncio.CancelledError:
            if got:
                raise Stopped(got[0]) from None
            raise

    return asyncio.run(main())


async def drive(
    graph: Any, payload: Any, config: RunnableConfig, context: Any, progress: Progress
) -> Any:
    """Stream the graph to its end, answering its questions (clarifications, persons' turns) at the terminal.

    With no input (a resume) a question already pending is asked first, so the phase is not run again for it.
    """
    if payload is None and (pending := (await graph.aget_state(config)).interrupts):
        payload = Command(resume=await answers(pending))
    while True:
        stream = graph.astream(
            payload, config, context=context, stream_mode=["custom", "updates"], durability="sync"
        )
        async for mode, chunk in stream:
            if mode == "custom":
                progress.show(chunk)
        snapshot = await graph.aget_state(config)
        if not snapshot.interrupts:
            return snapshot
        progress.close()  # the live line ends before the questions are asked
        payload = Command(resume=await answers(snapshot.interrupts))


async def answers(interrupts: Sequence[Interrupt]) -> dict[str, Any]:
    """Each pending question's answer, by its interrupt's id; persons' turns in a fixed order (seat, target).

    A person's answer is read in a thread: Ctrl-C then stops the run at once, the question still pending.
    """
    out: dict[str, Any] = {}
    for item in sorted(
        interrupts,
        key=lambda i: (
            (str(i.value.get("seat")), str(i.value.get("target")))
            if is_person_question(i.value)
            else ("", "")
        ),
    ):
        try:
            out[item.id] = (
                await asyncio.to_thread(answer_turn, item.value)
                if is_person_question(item.value)
                else ask(item.value)
            )
        except InputError:
            if not out:
                raise
            return out  # keep what was answered; the rest are asked again, and fail again, next time round
    return out


def ask(request: dict[str, Any]) -> dict[str, list[str]]:
    """Ask the user each agent's questions; without a terminal, answer nothing."""
    answers: dict[str, list[str]] = {}
    interactive = sys.stdin.isatty()
    if not interactive:
        print(
            "clarifications: no terminal to ask; every question is recorded with no answer",
            file=sys.stderr,
        )
    for entry in request.get("questions", []):
        answers[entry["agent_id"]] = []
        for question in entry["questions"]:
            reply = ""
            if interactive:
                print(f"[{entry['agent_id']}] {question}", file=sys.stderr)
                reply = input("> ").strip()
            answers[entry["agent_id"]].append(reply)
    return answers


def ended(snapshot: Any) -> bool:
    """Return whether LangGraph has nothing left to run on a thread: a checkpoint with no tasks at all.

    ``snapshot.next`` alone misleads after a crash between a step's last write and the checkpoint after
    it: every task of the step has its result, so none is "next", yet the graph has not run on. Resuming
    applies those results and goes on; only a finished run (or one never started) has no tasks.
    """
    return not snapshot.tasks
