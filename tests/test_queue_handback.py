"""A worker stopped mid-debate hands the job back; any other cancellation or failure does not."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from procrastinate.job_context import AbortReason

from debate_engine.app.store import queue


class Job:
    """What procrastinate hands a task: its context, its app and job, and why it was aborted."""

    def __init__(self, reason: AbortReason | None) -> None:
        self.additional_context = {"worker": "w1", "db": "postgresql://u@h/db", "graphs": {}}
        self.app, self.job, self.reason = None, None, reason

    def abort_reason(self) -> AbortReason | None:
        return self.reason


@pytest.fixture
def stopped_mid_debate(monkeypatch: pytest.MonkeyPatch) -> None:
    async def note(*args: Any, **kwargs: Any) -> None:
        return None

    async def drive(*args: Any, **kwargs: Any) -> Any:
        raise asyncio.CancelledError

    monkeypatch.setattr(queue, "note", note)
    monkeypatch.setattr(queue, "drive_thread", drive)
    monkeypatch.setattr(queue, "athread_lock", lambda db, thread: contextlib.nullcontext())


def test_a_worker_shutdown_hands_the_job_back(stopped_mid_debate: None) -> None:
    with pytest.raises(queue.HandedBack):
        asyncio.run(
            queue.run_debate(Job(AbortReason.SHUTDOWN), thread_id="t", problem="p", context={})
        )


def test_any_other_cancellation_stays_a_cancellation(stopped_mid_debate: None) -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(queue.run_debate(Job(None), thread_id="t", problem="p", context={}))
