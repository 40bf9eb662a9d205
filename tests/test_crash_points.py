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
import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from debate_engine import compile_debate
from debate_engine.app.cli.runner import ended
from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.protocols import protocol
from debate_engine.app.measure.compare.tasks import builtin_tasks
from debate_engine.app.store.queue import drive_thread
from debate_engine.config.context import Context
from debate_engine.graph.roundtable import compile_roundtable
from tests.support.debate_cli import cli_env, in_process

CONTEXT = {"model": "fake", "agents": "kiss,security", "rounds": 2}
TABLE = {"model": "fake", "agents": "kiss,security", "turns": 6, "protocol": "roundtable"}
PROBLEM = "Design a cache for 500 rps"


class Killed(BaseException):
    """The process died here: nothing after it is written."""


class Dying:
    """A checkpointer that dies at its ``put_at``-th checkpoint or ``writes_at``-th batch of writes (see
    ``arm``), and stays dead: every later call fails too, as nothing reaches the disk of a killed process."""

    left: dict[str, int | None]
    dead: bool
    checkpoints: int

    def arm(self, put_at: int | None, writes_at: int | None) -> None:
        self.left, self.dead, self.checkpoints = {"put": put_at, "writes": writes_at}, False, 0

    def _tick(self, kind: str) -> None:
        left = self.left[kind]
        if self.dead or left is not None and left <= 0:
            self.dead = True
            raise Killed(kind)
        if left is not None:
            self.left[kind] = left - 1

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        self._tick("put")
        self.checkpoints += 1
        return await super().aput(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> Any:
        self._tick("writes")
        return await super().aput_writes(*args, **kwargs)

    def revive(self) -> None:
        """Run on, the same storage, as a new worker would."""
        self.left, self.dead = {"put": None, "writes": None}, False


class DyingSaver(Dying, InMemorySaver):
    """In memory."""

    def __init__(self, put_at: int | None, writes_at: int | None) -> None:
        super().__init__()
        self.arm(put_at, writes_at)


def _transcript_ids(values: dict[str, Any]) -> list[str]:
    return [t["id"] for t in values.get("transcript") or []]


@pytest.fixture(scope="module")
def whole() -> dict[str, Any]:
    """Return the same debate run without any interruption."""
    saver = DyingSaver(None, None)
    return asyncio.run(
        drive_thread({"phases": compile_debate(checkpointer=saver)}, "t", PROBLEM, CONTEXT, "w")
    )


@pytest.mark.parametrize(
    ("put_at", "writes_at"),
    # An uninterrupted two-round debate makes 10 checkpoints and 20 batches of writes: die at each checkpoint,
    # which is also right after the previous step's last write, and inside steps.
    [(n, None) for n in range(1, 10)] + [(None, n) for n in (1, 2, 4, 7, 9, 12, 15, 19)],
)
def test_a_debate_killed_at_any_point_is_finished_whole_by_the_next_worker(
    put_at: int | None, writes_at: int | None, whole: dict[str, Any]
) -> None:
    saver = DyingSaver(put_at, writes_at)
    graphs = {"phases": compile_debate(checkpointer=saver)}
    with pytest.raises(Killed):
        asyncio.run(drive_thread(graphs, "t", PROBLEM, CONTEXT, "a"))
    assert (
        saver.checkpoints < 10
    )  # the kill cut the run short (an uninterrupted one makes 10 checkpoints)
    saver.revive()
    values = asyncio.run(drive_thread(graphs, "t", PROBLEM, CONTEXT, "b"))
    assert _transcript_ids(values) == _transcript_ids(whole)
    assert [t["content"] for t in values["transcript"]] == [
        t["content"] for t in whole["transcript"]
    ]
    assert values["solution"] == whole["solution"]


def test_a_step_written_whole_without_its_next_checkpoint_has_not_ended(
    whole: dict[str, Any],
) -> None:
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
    assert ended(final) and _transcript_ids(values) == _transcript_ids(whole)


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


class DyingSqlite(Dying, AsyncSqliteSaver):
    """SQLite, as ``debate run`` keeps it."""


def test_resume_finishes_a_debate_killed_after_the_judges_writes(tmp_path: Path) -> None:
    """The judge's writes are in, the last checkpoint is not: the values hold a solution, the checkpoint a task.

    ``debate resume`` writes that checkpoint (asking no model) instead of calling the debate finished, so
    ``debate list`` reads it done.
    """
    db = str(tmp_path / "d.sqlite")
    config: Any = {"configurable": {"thread_id": "t"}}

    async def killed() -> Any:
        async with AsyncSqliteSaver.from_conn_string(db) as plain:
            saver = DyingSqlite(plain.conn)
            saver.arm(
                9, None
            )  # an uninterrupted two-round debate makes 10 checkpoints: die at the last
            graph = compile_debate(checkpointer=saver)
            with pytest.raises(Killed):
                await drive_thread({"phases": graph}, "t", PROBLEM, CONTEXT, "a")
            return await graph.aget_state(config)

    def state() -> str:
        listed = in_process("list", "--db", db, "--json")
        assert listed.returncode == 0, listed.stderr
        return str(json.loads(listed.stdout.splitlines()[0])["status"])

    before = asyncio.run(killed())
    assert before.values.get("solution") and not ended(before)
    assert state() == "interrupted"
    done = in_process("resume", "t", "--db", db, "--quiet", env={**cli_env(), "DEBATE_DB": db})
    assert done.returncode == 0, done.stderr
    assert state() == "done"


def test_a_comparison_run_killed_after_the_judges_writes_is_scored_and_finished() -> None:
    """``debate compare`` scores the run once and writes its last checkpoint, asking no model again."""
    tasks = builtin_tasks("builtin:arithmetic:1")
    chosen = protocol("debate", Context(model="fake", rounds=1), "generalist")

    def compare(saver: InMemorySaver) -> list[dict[str, Any]]:
        graph = compile_debate(checkpointer=saver)
        comparison = Comparison("t", {"debate": graph}, jobs=1, quiet=True)
        return asyncio.run(run_protocol(comparison, chosen, tasks, 1))

    counting = DyingSaver(None, None)
    whole = compare(counting)
    saver = DyingSaver(counting.checkpoints - 1, None)  # dies at the last checkpoint
    with pytest.raises(Killed):
        compare(saver)
    saver.revive()
    config: Any = {"configurable": {"thread_id": Comparison("t", {}).thread(chosen, tasks[0], 1)}}
    graph = compile_debate(checkpointer=saver)
    assert not ended(asyncio.run(graph.aget_state(config)))
    checkpoints_before = len(list(saver.list(config)))
    again = compare(saver)
    assert [r["correct"] for r in again] == [r["correct"] for r in whole]
    assert ended(asyncio.run(graph.aget_state(config)))
    assert (
        len(list(saver.list(config))) == checkpoints_before + 1
    )  # the last checkpoint, nothing re-run
