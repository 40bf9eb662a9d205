"""A process killed at any point of a debate: its job, taken up again, finishes the same debate.

A worker killed by SIGKILL stops wherever it is: between two checkpoints, in
the middle of a step's writes, or after a step's last write and before the
checkpoint that follows it. That last point once read as a finished debate
(every task of the step had its result, so LangGraph named no task "next"),
and the queue marked a half-made debate done with the turns it had. Here a
checkpointer that dies at a chosen call stands in for the kill, and
``drive_thread`` (what every worker runs) takes the thread up again on the
same storage.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from debate_engine import compile_debate
from debate_engine.app.cli.runner import ended
from debate_engine.app.store.queue import drive_thread
from debate_engine.graph.roundtable import compile_roundtable

CONTEXT = {"model": "fake", "agents": "kiss,security", "rounds": 2}
TABLE = {"model": "fake", "agents": "kiss,security", "turns": 6, "protocol": "roundtable"}
PROBLEM = "Design a cache for 500 rps"


class Killed(BaseException):
    """The process died here: nothing after it is written."""


class DyingSaver(InMemorySaver):
    """An in-memory checkpointer that dies at its ``put_at``-th checkpoint or ``writes_at``-th batch of writes."""

    def __init__(self, put_at: int | None, writes_at: int | None) -> None:
        super().__init__()
        self.left = {"put": put_at, "writes": writes_at}

    def _tick(self, kind: str) -> None:
        left = self.left[kind]
        if left is None:
            return
        if left <= 0:
            raise Killed(kind)
        self.left[kind] = left - 1

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        self._tick("put")
        return await super().aput(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> Any:
        self._tick("writes")
        return await super().aput_writes(*args, **kwargs)

    def revive(self) -> None:
        """Run on, the same storage, as a new worker would."""
        self.left = {"put": None, "writes": None}


def _transcript_ids(values: dict[str, Any]) -> list[str]:
    return [t["id"] for t in values.get("transcript") or []]


def _uninterrupted() -> dict[str, Any]:
    saver = DyingSaver(None, None)
    return asyncio.run(
        drive_thread({"phases": compile_debate(checkpointer=saver)}, "t", PROBLEM, CONTEXT, "w")
    )


WHOLE = _uninterrupted()


@pytest.mark.parametrize(
    ("put_at", "writes_at"),
    # An uninterrupted two-round debate makes 10 checkpoints and 20 batches of writes: die at each checkpoint,
    # which is also right after the previous step's last write, and inside steps.
    [(n, None) for n in range(1, 10)] + [(None, n) for n in (1, 2, 4, 7, 9, 12, 15, 19)],
)
def test_a_debate_killed_at_any_point_is_finished_whole_by_the_next_worker(
    put_at: int | None, writes_at: int | None
) -> None:
    saver = DyingSaver(put_at, writes_at)
    graphs = {"phases": compile_debate(checkpointer=saver)}
    with pytest.raises(Killed):
        asyncio.run(drive_thread(graphs, "t", PROBLEM, CONTEXT, "a"))
    saver.revive()
    values = asyncio.run(drive_thread(graphs, "t", PROBLEM, CONTEXT, "b"))
    assert _transcript_ids(values) == _transcript_ids(WHOLE)
    assert [t["content"] for t in values["transcript"]] == [
        t["content"] for t in WHOLE["transcript"]
    ]
    assert values["solution"] == WHOLE["solution"]


def test_a_step_written_whole_without_its_next_checkpoint_has_not_ended() -> None:
    """The exact point that misled: ``next`` is empty, the step's tasks hold their results."""
    saver = DyingSaver(
        2, None
    )  # the input's checkpoint and intake's writes are in, not the one after
    graph = compile_debate(checkpointer=saver)
    with pytest.raises(Killed):
        asyncio.run(drive_thread({"phases": graph}, "t", PROBLEM, CONTEXT, "a"))
    saver.revive()
    snapshot = asyncio.run(graph.aget_state({"configurable": {"thread_id": "t"}}))
    assert snapshot.next == () and snapshot.tasks  # what once read as finished
    assert not ended(snapshot)
    values = asyncio.run(drive_thread({"phases": graph}, "t", PROBLEM, CONTEXT, "b"))
    final = asyncio.run(graph.aget_state({"configurable": {"thread_id": "t"}}))
    assert ended(final) and _transcript_ids(values) == _transcript_ids(WHOLE)


def _table(saver: DyingSaver) -> dict[str, Any]:
    return {
        "phases": compile_debate(checkpointer=saver),
        "roundtable": compile_roundtable(checkpointer=saver),
    }


@pytest.mark.parametrize("put_at", [1, 2, 3, 5, 7, 9])
def test_a_roundtable_killed_between_checkpoints_is_finished_whole(put_at: int) -> None:
    run = lambda saver, name: asyncio.run(  # noqa: E731
        drive_thread(_table(saver), "t", PROBLEM, TABLE, name, "roundtable")
    )
    whole = run(DyingSaver(None, None), "w")
    saver = DyingSaver(put_at, None)
    with pytest.raises(Killed):
        run(saver, "a")
    saver.revive()
    values = run(saver, "b")
    assert len(whole["transcript"]) == 7  # six turns and the judge
    assert [t["content"] for t in values["transcript"]] == [
        t["content"] for t in whole["transcript"]
    ]
