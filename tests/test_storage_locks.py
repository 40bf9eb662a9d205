"""The thread lock is taken without blocking the event loop, and still excludes a second holder."""

from __future__ import annotations

import asyncio
import fcntl
import time
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.store.database import ThreadBusy, athread_busy, athread_lock


async def ticks_while(work: Any) -> int:
    """How often a 10 ms ticker ran on the loop while ``work`` was awaited."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    await work
    task.cancel()
    return ticks


def test_a_slow_file_lock_leaves_the_event_loop_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file on a slow network disk takes its time; the loop (signals, progress) must not wait for it."""
    real = fcntl.flock

    def slow(handle: Any, operation: int) -> None:
        time.sleep(0.3)
        real(handle, operation)

    monkeypatch.setattr(fcntl, "flock", slow)

    async def take() -> None:
        async with athread_lock(str(tmp_path / "d.sqlite"), "t"):
            pass

    assert asyncio.run(ticks_while(take())) >= 10


def test_a_held_thread_refuses_a_second_holder_until_released(tmp_path: Path) -> None:
    db = str(tmp_path / "d.sqlite")

    async def check() -> None:
        async with athread_lock(db, "t"):
            assert await athread_busy(db, "t") and not await athread_busy(db, "other")
            with pytest.raises(ThreadBusy, match="debate t is running in another process"):
                async with athread_lock(db, "t"):
                    pass
        assert not await athread_busy(db, "t")

    asyncio.run(check())
