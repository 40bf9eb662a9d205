"""The embedded server answers one request at a time: a run never sends it two at once, whatever its limit."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from debate_engine.calls.slots import aslot, hold, slot_limit


@pytest.mark.parametrize("asked", [0, 1, 4, 64])
def test_the_embedded_server_gets_one_request_at_a_time_whatever_the_run_asks(asked: int) -> None:
    assert slot_limit("local", asked) == 1
    assert slot_limit("openai", asked) == asked


def test_threads_and_tasks_on_the_embedded_server_never_overlap() -> None:
    open_now, peak, lock = 0, 0, threading.Lock()

    def request() -> None:
        nonlocal open_now, peak
        release = hold("run", "local", slot_limit("local", 8))
        with lock:
            open_now += 1
            peak = max(peak, open_now)
        time.sleep(0.01)
        with lock:
            open_now -= 1
        release()

    threads = [threading.Thread(target=request) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def arequest() -> None:
        nonlocal open_now, peak
        async with aslot("run", "local", slot_limit("local", 8)):
            open_now += 1
            peak = max(peak, open_now)
            await asyncio.sleep(0.01)
            open_now -= 1

    async def all_of_them() -> None:
        await asyncio.gather(*(arequest() for _ in range(6)))

    asyncio.run(all_of_them())
    assert peak == 1
