"""Rate limits on the road: requests and tokens per period, per model and per provider, one budget per process
or per shared database.

Providers count requests and tokens in buckets that refill continuously (``calls.buckets``) and answer 429 past
them. Before a request is sent the road takes one request and its token estimate (the prompt and its whole
output allowance, as OpenAI counts at request time) from the model's buckets, sleeping until its turn; once the
answer's usage is known the difference is settled. A wait longer than the request's deadline takes nothing and
fails the request (:class:`RateLimited`): the debate stops, resumable.

A 429 pauses the model for every run drawing on it: its ``Retry-After`` (or a back-off with jitter when it says
nothing), so the runs that were not refused do not walk into the same wall.

Each run is held to the limits its settings state (:func:`declare`, by thread); runs stating the same limit on a
model share its bucket. The buckets live in a store: in the process by default; a store every process shares is
handed down from above with :func:`sharing` (``app.store.shared_limits`` keeps it in SQLite beside the debates'
database).

None of ``limits``, ``pyrate-limiter`` or ``aiolimiter`` is used: see the README's section on rate limits.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from typing_extensions import TypedDict

from debate_engine.calls.buckets import Bucket, InProcess, Store, Take, Unit
from debate_engine.calls.retry import backoff, server_wait
from debate_engine.errors import ProviderError
from debate_engine.memory.records import Usage

PERIOD_S = 60.0
"""Providers state their limits per minute."""
ENDPOINTS = ("OPENAI_BASE_URL", "OPENROUTER_BASE_URL")
"""The variables that point the providers at a server (``providers.factory`` reads them)."""
RUNS_KEPT = 10_000
"""Runs whose limits a process remembers (a long-lived server forgets the oldest)."""


class RateLimit(TypedDict):
    """One model's (or provider's) limits per period; None: no limit of that kind."""

    rpm: float | None
    """Requests per period."""
    tpm: float | None
    """Tokens per period: prompt and output allowance at request time, settled to the usage reported."""


class RateLimits(TypedDict):
    """A run's rate limits as its settings fix them."""

    models: dict[str, RateLimit]
    """By model spec (``openai:gpt-4o-mini``)."""
    providers: dict[str, RateLimit]
    """By provider (``openai``): every model of it draws on these too."""
    period_s: float
    """The seconds a limit counts over: 60 as providers state them (a test runs on a scaled clock)."""


def no_limits() -> RateLimits:
    """Return the limits of a run that states none."""
    return RateLimits(models={}, providers={}, period_s=PERIOD_S)


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
    settled: bool = field(default=False)


class Limiter:
    """The limits each run of this process stated, and the store their buckets live in."""

    def __init__(self, store: Store | None = None) -> None:
        self.store: Store = store or InProcess()
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, dict[tuple[str, str], list[Bucket]]] = OrderedDict()
        """Per run, the buckets of each ``("model", spec)`` and ``("provider", name)`` it states limits for."""

    def declare(self, run: str, limits: RateLimits) -> None:
        """Hold the requests of ``run`` (a thread id) to ``limits`` from now on.

        Runs that state the same limit on a model share its bucket, here and in a shared store: a limit is a
        fact of the provider account, and a bucket is named by what it limits and how much. A run that states
        another limit keeps to its own.
        """
        period = float(limits.get("period_s") or PERIOD_S)
        given = [("model", k, v) for k, v in limits.get("models", {}).items()]
        given += [("provider", k, v) for k, v in limits.get("providers", {}).items()]
        buckets: dict[tuple[str, str], list[Bucket]] = {}
        for kind, key, limit in given:
            stated: tuple[tuple[Unit, float | None], ...] = (
                ("requests", limit.get("rpm")),
                ("tokens", limit.get("tpm")),
            )
            for unit, value in stated:
                if value:
                    name = f"{kind}:{key}:{unit}:{value:g}/{period:g}s"
                    buckets.setdefault((kind, key), []).append(
                        Bucket(name, unit, value, value / period)
                    )
        with self._lock:
            self._runs[run] = buckets
            self._runs.move_to_end(run)
            while len(self._runs) > RUNS_KEPT:
                self._runs.popitem(last=False)

    def buckets_of(self, run: str, spec: str, provider: str) -> list[Bucket]:
        """Return the buckets a request of ``run`` to ``spec`` draws on: its model's, then its ``provider``'s, at
        the endpoint the providers are pointed to."""
        with self._lock:
            stated = self._runs.get(run, {})
            found = [*stated.get(("model", spec), []), *stated.get(("provider", provider), [])]
        here = endpoint()
        return [replace(b, name=f"{here}/{b.name}") for b in found]

    def forget(self) -> None:
        """Drop every limit and level (a test's clean slate)."""
        with self._lock:
            self._runs.clear()
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
        key = paused_name(spec)
        send, taken = self.store.reserve(takes, key, left_s, time.time())
        if not taken:
            raise RateLimited(_too_long(spec, send - time.time(), left_s))  # nothing was taken
        held = Held(takes, estimate)
        try:
            # sleep until the time given, not for a span: a late return from the store must not shift it
            while (wait := send - time.time()) > 0:
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
        time.sleep(step)
    return step


async def areserve(asked: Asked, left_s: float) -> Held:
    """Return the async twin of :func:`reserve`: a blocking store is read from a thread, waits are cancellable."""
    steps = LIMITER._steps(asked, left_s)
    blocking = LIMITER.store.blocking
    while isinstance(
        step := await asyncio.to_thread(_advance, steps) if blocking else _advance(steps), float
    ):
        try:
            await asyncio.sleep(step)
        except asyncio.CancelledError:
            steps.close()  # gives back what was taken: the request will not be sent
            raise
    return step


def _advance(steps: Generator[float, None, Held]) -> float | Held:
    """Return the next wait, or what was held once there is none (StopIteration cannot cross a thread)."""
    try:
        return next(steps)
    except StopIteration as done:
        held: Held = done.value
        return held


def settle(held: Held, usage: Usage | None, given_back: bool = False) -> None:
    """Settle a request's tokens to the usage reported (see :meth:`Limiter.settle`)."""
    LIMITER.settle(held, usage, given_back)


def pause_after(spec: str, failure: BaseException | None) -> None:
    """Pause ``spec`` for every run after a 429 (see :meth:`Limiter.pause_after`)."""
    LIMITER.pause_after(spec, failure)


def forget() -> None:
    """Drop every limit, level and pause of the process (tests)."""
    LIMITER.forget()


def limits_of(settings: Mapping[str, Any]) -> RateLimits:
    """Return the rate limits fixed in a run's settings (none in a debate set up before they existed)."""
    return settings.get("rate_limits") or no_limits()
