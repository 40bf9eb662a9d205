"""Provider slots per debate run: how many requests one run may have in flight at one provider.

A slot table per process would let concurrent debates in one worker (or one
``langgraph dev``) share and starve each other's limit, and a table keyed by
event loop grows with every loop. Here a semaphore exists only while some call
of its run holds or waits for it, so the table never outlives its users.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from debate_engine.providers.factory import loop_token

LOCAL_SLOTS = 1
"""Requests the embedded llama.cpp server serves at once: more would only queue there and blur latency."""

_lock = threading.Lock()
_table: dict[tuple[Any, ...], list[Any]] = {}
"""Key -> [semaphore, users]; the entry goes when its last user leaves."""


def slot_limit(provider: str, limit: int) -> int:
    """Return the run's limit for ``provider``: ``--max-concurrency``, and one for the embedded server whatever it says."""
    if provider == "local":
        return min(limit, LOCAL_SLOTS) if limit else LOCAL_SLOTS
    return limit


def _enter(key: tuple[Any, ...], make: Any) -> Any:
    with _lock:
        entry = _table.setdefault(key, [make(), 0])
        entry[1] += 1
        return entry[0]


def _leave(key: tuple[Any, ...]) -> None:
    with _lock:
        entry = _table[key]
        entry[1] -= 1
        if entry[1] == 0:
            del _table[key]


def hold(run: str, provider: str, limit: int) -> Any:
    """Take one of the run's slots from a thread and return its release, to call once the request is closed.

    A request abandoned at its deadline stays open at the provider until its client gives up: its slot is
    held until then, so ``--max-concurrency`` counts the requests really open (``invoke``'s path).
    """
    if not limit:
        return lambda: None
    key = ("thread", run, provider, limit)
    semaphore = _enter(key, lambda: threading.BoundedSemaphore(limit))
    semaphore.acquire()
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            semaphore.release()
            _leave(key)

    return release


@asynccontextmanager
async def aslot(run: str, provider: str, limit: int) -> AsyncIterator[None]:
    """Hold one of the run's slots from the event loop; waiters are served in the order they came."""
    if not limit:
        yield
        return
    key = ("loop", loop_token(), run, provider, limit)
    semaphore = _enter(key, lambda: asyncio.Semaphore(limit))
    try:
        async with semaphore:
            yield
    finally:
        _leave(key)


def table_size() -> int:
    """Entries alive now (tests check that finished runs leave none)."""
    with _lock:
        return len(_table)
