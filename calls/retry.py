"""Which failed requests the road sends again, and how long it waits first.

The provider's client sends every request once (``max_retries`` 0 in ``providers.factory``): a request it
re-sent on its own was neither counted nor charged, and under ``invoke`` it went on re-sending from its helper
thread after the road had given the call up at its deadline. The road asks again instead, as one more
attempt, for what the client used to retry: a broken connection or a timeout of the client's own, HTTP 408,
409, 429 and 5xx (or whatever the server's ``x-should-retry`` says), and a 200 whose body is not JSON.

A 429 is not a failure of the request but a turn not yet come: it is asked again however many came before, after
the wait the server asked for (or a growing back-off with jitter), as long as that wait ends before the model's
deadline. Only the deadline bounds them; the other failures also stop after :data:`RETRIES`.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC
from typing import Any

ErrorTypes = tuple[type[BaseException], ...]

RETRIES = 3
"""Requests sent again per model of a call, as the client did before: at most 4 requests per model."""
FIRST_WAIT_S = 0.5
"""The back-off before the first retry, doubled at each one after it."""
LONGEST_WAIT_S = 8.0
RETRIED_STATUS = frozenset({408, 409, 429})
"""Statuses asked again besides 5xx: request timeout, conflict (a lock), rate limit."""


def retry_wait(
    failure: BaseException | None, retries: int, left_s: float, refusals: int = 0
) -> float | None:
    """Return the wait before asking a model again after ``failure``, or None: do not ask it again.

    ``retries``: the failures other than 429 already asked again, at most :data:`RETRIES`; ``refusals``: the 429s,
    as many as the deadline allows. The wait is what the server asked for, else the back-off (a 429 that says
    "now" backs off too, so that it is not asked again in a loop). One that would end past the model's deadline
    (``left_s`` from now) is not taken: the next model, with its own deadline, is asked instead, or the call
    fails.
    """
    if failure is None or not should_retry(failure):
        return None
    limited = rate_limited(failure)
    if not limited and retries >= RETRIES:
        return None
    asked = server_wait(failure)
    if asked is None or (limited and asked == 0):
        wait = backoff(refusals if limited else retries)
    elif limited and asked < FIRST_WAIT_S:
        # a 429 asking for a few ms waits the first back-off: else it is asked again in a loop to its deadline
        wait = backoff(0)
    else:
        wait = asked
    return wait if wait < left_s else None


def rate_limited(exc: BaseException | None) -> bool:
    """Return whether the server refused the request for a rate limit (HTTP 429): nothing was billed."""
    return getattr(exc, "status_code", None) == 429


def should_retry(exc: BaseException) -> bool:
    """Return whether the failure may pass when asked again (the road's own deadline never does)."""
    if isinstance(exc, json.JSONDecodeError):
        return True  # a 200 whose body was cut or garbled on the way
    status_error, connection_error, _ = _client_errors()
    if isinstance(exc, status_error):
        said = str(_headers(exc).get("x-should-retry", "")).lower()
        if said in ("true", "false"):
            return said == "true"
        status = int(getattr(exc, "status_code", 0))
        return status in RETRIED_STATUS or status >= 500
    return isinstance(exc, connection_error)


def client_timeout(exc: BaseException) -> bool:
    """Return whether the client gave up waiting for an answer: the request was sent and may be billed."""
    return isinstance(exc, _client_errors()[2])


def server_wait(exc: BaseException, now: Callable[[], float] = time.time) -> float | None:
    """Return the seconds the server asked to wait (``retry-after-ms``, else ``Retry-After`` in seconds or as an
    HTTP date), or None when it said nothing usable."""
    headers = _headers(exc)
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": a date in UTC with no zone of its own
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now())


def backoff(retry: int, draw: Callable[[], float] = random.random) -> float:
    """Return the wait before retry number ``retry`` (0 first): doubling, capped, half of it drawn at random so
    that calls failed together do not come back together."""
    ceiling = min(LONGEST_WAIT_S, FIRST_WAIT_S * 2.0 ** min(retry, 8))  # 2**1024 overflows a float
    return ceiling / 2 + draw() * ceiling / 2


def _number(value: Any) -> float | None:
    """Return ``value`` as a finite, non-negative number of its unit, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _headers(exc: BaseException) -> Mapping[str, Any]:
    """Return the headers of the response an error carries (openai's ``APIStatusError.response``), else none."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) else {}


def _client_errors() -> tuple[ErrorTypes, ErrorTypes, ErrorTypes]:
    """Return the client's HTTP status error, connection error (its timeouts included) and timeout types.

    None of them while the SDK is not loaded: no error of its can have been raised then, and a failure of
    another model (the fake) need not import it.
    """
    openai = sys.modules.get("openai")
    if openai is None:
        return (), (), ()
    return (openai.APIStatusError,), (openai.APIConnectionError,), (openai.APITimeoutError,)
