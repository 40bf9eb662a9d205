"""Rate limits on the road: requests and tokens per period, per model and per provider, one budget per process
or per shared database.

Providers count requests and tokens in buckets that refill continuously (``calls.buckets``) and answer 429 past
them. Before a request is sent the road takes one request and its token estimate (the prompt and its whole
output allowance, as OpenAI counts at request time) from the model's buckets, sleeping until its turn; once the
answer's usage is known the difference is settled. A wait longer than the request's deadline takes nothing and
fails the request (:class:`RateLimited`): the debate stops, resumable.

A 429 pauses the model for every run drawing on it: its ``Retry-After`` (or a back-off with jitter when it says nothing),
so the runs that were not refused do not walk into the same wall.

Each run is held to the limits its settings state (:func:`declare`, by thread); runs stating the same limit on a model
share its bucket. Where the provider states its limits in its answers' ``x-ratelimit-*`` headers
(``calls.ratelimit_headers``), the stricter of the stated and the read limit holds, and the run is told which (a
``rate_limit_adopted`` event). The buckets live in a store: in the process by default; a store every process shares is
handed down from above with :func:`sharing` (``app.store.shared_limits``: SQLite beside the debates' database, or
their PostgreSQL database).

A wait of a second or more is told as it starts (a ``rate_limit_wait`` event: the model and the seconds) and recorded
in the store, where ``debate list`` reads it from another process.

None of ``limits``, ``pyrate-limiter`` or ``aiolimiter`` is used: see the README's section on rate limits.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from debate_engine.calls.buckets import Bucket, InProcess, Store, Take, Unit
from debate_engine.calls.generators import resumed
from debate_engine.calls.rate_records import PERIOD_S, RateLimit
from debate_engine.calls.rate_records import (  # re-exported: callers import them from here
    RateLimits as RateLimits,
)
from debate_engine.calls.rate_records import limits_of as limits_of
from debate_engine.calls.rate_records import no_limits as no_limits
from debate_engine.calls.ratelimit_headers import (
    UNITS,
    Kept,
    adopted,
    floors_of,
    kept_limits,
    stated,
)
from debate_engine.calls.retry import backoff, server_wait
from debate_engine.errors import ProviderError
from debate_engine.memory.records import Usage

ENDPOINTS = ("OPENAI_BASE_URL", "OPENROUTER_BASE_URL")
"""The variables that point the providers at a server (``providers.factory`` reads them)."""
RUNS_KEPT = 10_000
"""Runs whose limits a process remembers (a long-lived server forgets the oldest)."""
WAIT_SHOWN_S = 1.0
"""A wait this long or longer is told (an event) and recorded (``debate list``); a shorter one passes unseen."""
WARM_S = 1.0
"""How long a process's other requests wait for its first to come back. The first call of a client loads modules
and opens its connection, hundreds of ms under load (more than the headroom): requests taken meanwhile would leave
together once it is done, reaching the provider as a burst. Two workers started together without it: their first
requests left up to 0.7 s after their time, and a few were refused."""


class RateLimited(ProviderError, RuntimeError):
    """A request could not be sent within its deadline for a rate limit: nothing was sent or billed.

    Its model failed as a provider's failure does (exit 3): the finished turns are kept, the debate resumes.
    (It imports nothing of ``providers``: the state's schema reads this module's records.)
    """


@dataclass(frozen=True)
class Asked:
    """A request about to be sent: whose run, which model, and its token estimate (counted only when needed)."""

    run: str
    spec: str
    provider: str
    tokens: Callable[[], int]


@dataclass
class Held:
    """What a request took: settled once its usage is known."""

    takes: tuple[Take, ...]
    tokens: int
    """The token estimate taken (0 when no token limit applies)."""
    asked: Asked | None = None
    """The request (its run and model), to read the limits its answer states."""
    settled: bool = field(default=False)


class Limiter:
    """The limits each run of this process stated, and the store their buckets live in."""

    def __init__(self, store: Store | None = None) -> None:
        self.store: Store = store or InProcess()
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, RateLimits] = OrderedDict()
        """The limits each run states."""
        self._read: dict[tuple[str, str], dict[Unit, float]] = {}
        """Per endpoint and model, the limits its provider states in its answers' headers."""
        self._told: dict[tuple[str, str, Unit], tuple[float | None, str]] = {}
        """Per run, model and kind, the limit it was last told it keeps to."""
        self.warm, self._first_out = threading.Event(), False
        """Set once a request of the process came back (:data:`WARM_S`); whether its first has left."""

    def declare(self, run: str, limits: RateLimits) -> None:
        """Hold the requests of ``run`` (a thread id) to ``limits`` from now on.

        Runs that state the same limit on a model share its bucket, here and in a shared store: a limit is a
        fact of the provider account, and a bucket is named by what it limits and how much. A run that states
        another limit keeps to its own.
        """
        with self._lock:
            self._runs[run] = limits
            self._runs.move_to_end(run)
            while len(self._runs) > RUNS_KEPT:
                self._runs.popitem(last=False)

    def kept(self, run: str, spec: str) -> dict[Unit, Kept]:
        """Return the limits of each kind ``run`` keeps to on ``spec``: the stricter of its own and the read."""
        with self._lock:
            own = (self._runs.get(run) or no_limits()).get("models", {}).get(spec)
            read = dict(self._read.get((endpoint(), spec), {}))
        return kept_limits(own or {}, read)

    def buckets_of(self, run: str, spec: str, provider: str) -> list[Bucket]:
        """Return the buckets a request of ``run`` to ``spec`` draws on: its model's (the stricter of the stated
        and the read limit), then its ``provider``'s, at the endpoint the providers are pointed to."""
        with self._lock:
            limits = self._runs.get(run) or no_limits()
        period = float(limits.get("period_s") or PERIOD_S)
        here = endpoint()
        given: list[tuple[str, str, Unit, float | None]] = [
            ("model", spec, unit, kept.value) for unit, kept in self.kept(run, spec).items()
        ]
        on_provider = limits.get("providers", {}).get(provider) or RateLimit(rpm=None, tpm=None)
        stated_on: dict[Unit, float | None] = {
            "requests": on_provider["rpm"],
            "tokens": on_provider["tpm"],
        }
        given += [("provider", provider, unit, stated_on[unit]) for unit in UNITS]
        return [
            Bucket(f"{here}/{kind}:{key}:{unit}:{value:g}/{period:g}s", unit, value, value / period)
            for kind, key, unit, value in given
            if value
        ]

    def _first(self) -> bool:
        """Return whether the process is warm, or this request is its first (the others wait for it)."""
        with self._lock:
            first, self._first_out = not self._first_out, True
        return first or self.warm.is_set()

    def forget(self) -> None:
        """Drop every limit and level (a test's clean slate)."""
        with self._lock:
            self._runs.clear()
            self._read.clear()
            self._told.clear()
        self.store = InProcess()

    def _steps(self, asked: Asked, left_s: float) -> Generator[float, None, Held]:
        """Take what a request needs, yielding each wait; raise RateLimited past ``left_s``."""
        spec, tokens = asked.spec, asked.tokens
        buckets, deadline = (
            self.buckets_of(asked.run, spec, asked.provider),
            time.monotonic() + left_s,
        )
        estimate = tokens() if any(b.unit == "tokens" for b in buckets) else 0
        takes = tuple((b, 1.0 if b.unit == "requests" else float(estimate)) for b in buckets)
        for bucket, amount in takes:
            if amount > bucket.limit:
                raise RateLimited(
                    f"{spec}: a request of {amount:g} {bucket.unit} can never pass the limit of "
                    f"{bucket.limit:g} per period ({bucket.name}); lower the output allowance or raise it"
                )
        if takes and not self._first():
            warming = time.monotonic() + min(WARM_S, left_s / 2)
            while not self.warm.is_set() and time.monotonic() < warming:
                yield 0.05
        key, left_s = paused_name(spec), deadline - time.monotonic()
        asked_at = time.time()
        send, taken = self.store.reserve(takes, key, left_s, asked_at)  # counted from the asking
        if not taken:  # nothing was taken
            raise RateLimited(_too_long(spec, send - asked_at, left_s))
        held, noted = Held(takes, estimate, asked), 0.0
        try:
            # sleep until the time given, not for a span: a late return from the store must not shift it
            while (wait := send - time.time()) > 0:
                if wait >= WAIT_SHOWN_S and send > noted:
                    self.store.note_wait(asked.run, spec, send)  # where `debate list` reads it
                    noted = send
                yield wait
                # a 429 elsewhere may have paused the model meanwhile: look again, taking nothing more
                most = deadline - time.monotonic()
                send, taken = self.store.reserve((), key, most, time.time())
                if not taken:
                    raise RateLimited(_too_long(spec, send - time.time(), most))
        except BaseException:  # failed, cancelled or closed: the request will not be sent
            self.settle(held, None, given_back=True)
            raise
        return held

    def settle(self, held: Held, usage: Usage | None, given_back: bool = False) -> None:
        """Settle the tokens taken to what the provider counted (a request that billed nothing gives them back).

        The request itself stays counted: the provider may have counted it. ``given_back``: the request was never
        sent, so it is given back too.
        """
        self.warm.set()
        if held.settled or not held.takes:
            return
        held.settled = True
        used = held.tokens if usage and usage.get("estimated") else _used(usage)
        changes = [
            (b, -amount if given_back else float(used - held.tokens))
            for b, amount in held.takes
            if given_back or b.unit == "tokens"
        ]
        if any(change for _, change in changes):
            self.store.adjust(changes, time.time())

    def read(self, asked: Asked, headers: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """Take in the limits an answer's headers state for its model, and raise its buckets to what the provider
        counts; return what the run is to be told (the limit it keeps to, when that changed, and whose)."""
        said = stated(headers)
        if said is None:
            return []
        run, spec, here = asked.run, asked.spec, endpoint()
        with self._lock:
            self._read[(here, spec)] = dict(said.limit)
            period = float((self._runs.get(run) or no_limits()).get("period_s") or PERIOD_S)
        own = [
            b
            for b in self.buckets_of(run, spec, asked.provider)
            if b.name.startswith(f"{here}/model:")
        ]
        if floors := floors_of(said, own):
            self.store.floor(floors, time.time())
        news = []
        for unit, kept in self.kept(run, spec).items():
            with self._lock:
                before = self._told.get((run, spec, unit))
                self._told[(run, spec, unit)] = (kept.value, kept.source)
            if kept.read is not None and before != (kept.value, kept.source):
                news.append(adopted(spec, unit, kept, period))
        return news

    def pause_after(self, spec: str, failure: BaseException | None) -> None:
        """Pause ``spec`` for every run after a 429: as long as it said, else a back-off with jitter."""
        if getattr(failure, "status_code", None) != 429:
            return
        assert failure is not None
        asked = server_wait(failure)
        self.store.pause(paused_name(spec), time.time() + (backoff(0) if asked is None else asked))


def endpoint() -> str:
    """Return a short name for where the providers are pointed (their base URLs, hashed: a URL may hold a
    password). A limit is an account's and a pause a server's: neither holds at another server that serves a model
    of the same name."""
    where = "|".join(os.environ.get(v, "") for v in ENDPOINTS)
    return hashlib.sha256(where.encode()).hexdigest()[:12]


def paused_name(spec: str) -> str:
    """Return the name the pause of ``spec`` goes by at this endpoint."""
    return f"{endpoint()}/model:{spec}"


def _used(usage: Usage | None) -> int:
    return int(usage["input_tokens"]) + int(usage["output_tokens"]) if usage else 0


def _too_long(spec: str, wait: float, left: float) -> str:
    return (
        f"{spec}: rate limit: the next request could be sent in {wait:.1f} s, past the {max(left, 0):.1f} s "
        "left before its deadline; nothing was sent. Resume the debate later, or raise --timeout"
    )


LIMITER = Limiter()
"""The process's limiter: every request of every run in the process takes from it."""


def store_blocks() -> bool:
    """Return whether the buckets live in a database reached by blocking calls (PostgreSQL, SQLite): the
    async road then reaches it from a thread."""
    return LIMITER.store.blocking


def declare(run: str, limits: RateLimits) -> None:
    """Hold the requests of ``run`` to ``limits`` (see :meth:`Limiter.declare`)."""
    LIMITER.declare(run, limits)


@contextmanager
def sharing(store: Store) -> Iterator[Store]:
    """Keep the buckets in ``store`` while the block runs (a database every process shares), then as before."""
    before, LIMITER.store = LIMITER.store, store
    try:
        yield store
    finally:
        LIMITER.store = before


def reserve(asked: Asked, left_s: float) -> Held:
    """Take what a request needs from its buckets, sleeping until it may be sent (a thread's path)."""
    steps = LIMITER._steps(asked, left_s)
    while isinstance(step := _advance(steps), float):
        _tell_wait(asked, step)
        time.sleep(step)
    return step


async def areserve(asked: Asked, left_s: float) -> Held:
    """Return the async twin of :func:`reserve`: a blocking store is read from a thread, waits are cancellable."""
    steps = LIMITER._steps(asked, left_s)
    blocking = LIMITER.store.blocking
    while isinstance(
        step := await asyncio.to_thread(_advance, steps) if blocking else _advance(steps), float
    ):
        _tell_wait(asked, step)
        try:
            await asyncio.sleep(step)
        except asyncio.CancelledError:
            steps.close()  # gives back what was taken: the request will not be sent
            raise
    return step


def _tell_wait(asked: Asked, wait: float) -> None:
    """Tell the run that a request waits for its model's rate limit, when it is long enough to notice."""
    if wait >= WAIT_SHOWN_S:
        emit({"event": "rate_limit_wait", "model": asked.spec, "seconds": round(wait, 1)})


def emit(event: dict[str, Any]) -> None:
    """Send a custom stream event to the graph run making the request; nothing outside a run.

    (``nodes.status.emit`` is the nodes'; the road sits below them.)
    """
    loaded = sys.modules.get("langgraph.config")
    if loaded is None:  # no graph runs in a process that never loaded it
        return
    try:
        writer = loaded.get_stream_writer()
    except RuntimeError:
        return
    writer(event)


def _advance(steps: Generator[float, None, Held]) -> float | Held:
    """Return the next wait, or what was held once there is none."""
    return resumed(steps, None)


def settle(
    held: Held,
    usage: Usage | None,
    given_back: bool = False,
    headers: Mapping[str, Any] | None = None,
) -> None:
    """Settle a request's tokens to the usage reported (see :meth:`Limiter.settle`), and take in the limits its
    answer's ``headers`` state (:meth:`Limiter.read`), telling the run the limit it keeps to when that changed."""
    LIMITER.settle(held, usage, given_back)
    if held.asked is not None and headers:
        for event in LIMITER.read(held.asked, headers):
            emit(event)


def pause_after(spec: str, failure: BaseException | None) -> None:
    """Pause ``spec`` for every run after a 429 (see :meth:`Limiter.pause_after`)."""
    LIMITER.pause_after(spec, failure)


def pause(spec: str, seconds: float) -> None:
    """Send nothing to ``spec`` from any run for ``seconds``: a 429's wait, taken at the limiter by every run
    (the refused one's retry too), where it is told and recorded."""
    LIMITER.store.pause(paused_name(spec), time.time() + seconds)


def forget() -> None:
    """Drop every limit, level and pause of the process (tests)."""
    LIMITER.forget()
