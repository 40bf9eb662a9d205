"""Buckets that refill continuously, as providers count requests and tokens: the arithmetic, and the store of a
process.

A limit of L per period holds at most L and refills L per period. A take is a reservation: the request is given
the time the refill makes room for it (after the one taken before it), the bucket counts it from then, and it
sleeps until then; waiters are served in the order they came and nobody polls. One store keeps the levels
in memory (:class:`InProcess`); ``app.store.shared_limits`` keeps the same rows in SQLite for several processes
and ``app.store.postgres_limits`` in PostgreSQL for a worker fleet. Each applies :func:`plan`, :func:`adjusted`
and :func:`floored`, so a row holds exactly what the dict holds.

Nothing taken can leak: a level drains by itself as the bucket refills, so a process killed between its take and
its settlement (or while its request waited in line) costs the others at most what it took, for one period.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

HEADROOM_S = 1.0
"""Seconds of refill kept unspent. A request reaches the provider later than it was taken here, by a varying
delay, so two requests a refill apart here may arrive closer there. Measured on two cores with twelve debates at
once: delays varied by more than 0.25 s (one request in six runs refused at 0.25, none at 0.5); with three
processes on one database under a load average of 7 to 10 (other test runs beside), by more than 0.5 s (1 to 3
requests refused in 5 runs of 6 at 0.5, none in 3 at 1.0). Per minute it costs 1/60 of a burst and nothing of the
rate."""

Unit = Literal["requests", "tokens"]


@dataclass(frozen=True)
class Bucket:
    """One limit: at most ``limit`` units, refilled at ``per_s`` units a second."""

    name: str
    """What is limited and in which unit: ``model:openai:gpt-4o-mini:tokens``."""
    unit: Unit
    limit: float
    per_s: float

    @property
    def room(self) -> float:
        """Return the units this process may have taken at once: the limit less the headroom."""
        return max(self.limit - self.per_s * HEADROOM_S, 0.0)


Take = tuple[Bucket, float]
Level = tuple[float, float]
"""Units in a bucket, and the time they are counted at: the send time of the latest request taken, which may
lie ahead (that request is waiting). A request taken later is sent no earlier: waiters are served in order."""


def drained(level: Level, per_s: float, now: float) -> float:
    """Return the units still in the bucket at ``now`` (none drain before the time the level is counted at)."""
    taken, at = level
    return max(0.0, taken - per_s * max(0.0, now - at))


def plan(
    levels: Mapping[str, Level], takes: Sequence[Take], paused_until: float, now: float
) -> tuple[float, dict[str, Level]]:
    """Return when a request may be sent (seconds since the epoch), and its buckets' levels once it is taken.

    In each bucket it is sent after the request taken before it, once the refill has made room for it; one
    larger than the room waits for the bucket to be empty. It is sent when every bucket (and the pause) allow.
    """
    send = max(now, paused_until)
    for bucket, amount in takes:
        level, at = levels.get(bucket.name, (0.0, now))
        start = max(now, at)
        held = drained((level, at), bucket.per_s, start)
        over = held + amount - bucket.room if amount <= bucket.room else held
        send = max(send, start + max(0.0, over) / bucket.per_s)
    after = {
        bucket.name: (
            drained(levels.get(bucket.name, (0.0, now)), bucket.per_s, send) + amount,
            send,
        )
        for bucket, amount in takes
    }
    return send, after


def adjusted(levels: Mapping[str, Level], changes: Sequence[Take], now: float) -> dict[str, Level]:
    """Return the levels with each change added (a negative one gives units back), never below empty; a level
    counted ahead (a request waiting) is changed there."""
    out = {}
    for bucket, amount in changes:
        level, at = levels.get(bucket.name, (0.0, now))
        when = max(now, at)
        out[bucket.name] = (max(0.0, drained((level, at), bucket.per_s, when) + amount), when)
    return out


def floored(levels: Mapping[str, Level], floors: Sequence[Take], now: float) -> dict[str, Level]:
    """Return the levels raised, where they are lower, to what the provider said it counts at ``now`` (its
    ``x-ratelimit-remaining-*``: requests of other clients on the same account); a level counted ahead keeps its
    time, the floor drained to it."""
    out = {}
    for bucket, least in floors:
        level, at = levels.get(bucket.name, (0.0, now))
        when = max(now, at)
        held = drained((level, at), bucket.per_s, when)
        told = drained((least, now), bucket.per_s, when)
        if told > held:
            out[bucket.name] = (told, when)
    return out


Wait = tuple[str, float]
"""A run's longest wait under way: the model it waits for, and the time (seconds since the epoch) it ends."""


class Store(Protocol):
    """Where the buckets' levels and the models' pauses live."""

    blocking: bool
    """Whether its calls wait on I/O (an async caller then makes them from a thread)."""

    def reserve(
        self, takes: Sequence[Take], pause: str, most_wait_s: float, now: float
    ) -> tuple[float, bool]:
        """Return when the request may be sent, and whether it was taken: only when that is at most
        ``most_wait_s`` from ``now``, when it asked. A store that waits for a lock counts that wait too (the
        request's deadline runs meanwhile); the time it plans from is when it holds the lock."""
        ...

    def adjust(self, changes: Sequence[Take], now: float) -> None:
        """Add each change to its bucket (negative: give back)."""
        ...

    def pause(self, name: str, until: float) -> None:
        """Send nothing on ``name`` before ``until`` (a later pause already set stays)."""
        ...

    def floor(self, floors: Sequence[Take], now: float) -> None:
        """Raise each bucket to at least its floor at ``now`` (:func:`floored`)."""
        ...

    def note_wait(self, run: str, model: str, until: float) -> None:
        """Record that a request of ``run`` waits for ``model``'s limits until ``until``, where another process
        may read it (``debate list``)."""
        ...

    def close(self) -> None:
        """Let go of what the store holds open."""
        ...


class InProcess:
    """The buckets of one process, shared by its threads and event loops."""

    blocking = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.levels: dict[str, Level] = {}
        self.pauses: dict[str, float] = {}
        self.waits: dict[str, Wait] = {}
        """By run: its latest wait for a rate limit (only this process can read it)."""

    def reserve(
        self, takes: Sequence[Take], pause: str, most_wait_s: float, now: float
    ) -> tuple[float, bool]:
        """Return when the request may be sent, and whether it was taken (within ``most_wait_s``)."""
        with self._lock:
            send, after = plan(self.levels, takes, self.pauses.get(pause, 0.0), now)
            taken = send - now <= most_wait_s
            if taken:
                self.levels.update(after)
            return send, taken

    def adjust(self, changes: Sequence[Take], now: float) -> None:
        """Add each change to its bucket (negative: give back)."""
        with self._lock:
            self.levels.update(adjusted(self.levels, changes, now))

    def pause(self, name: str, until: float) -> None:
        """Send nothing on ``name`` before ``until``."""
        with self._lock:
            self.pauses[name] = max(until, self.pauses.get(name, 0.0))

    def floor(self, floors: Sequence[Take], now: float) -> None:
        """Raise each bucket to at least its floor at ``now``."""
        with self._lock:
            self.levels.update(floored(self.levels, floors, now))

    def note_wait(self, run: str, model: str, until: float) -> None:
        """Record that a request of ``run`` waits for ``model`` until ``until``."""
        with self._lock:
            self.waits[run] = (model, until)

    def close(self) -> None:
        """Hold nothing open: the levels stay for the process's next runs."""
