"""Tests that kill ``make mutate``'s survivors on issue 40's lines: the road's retries and rate limits, and
one number reader.

Each states a behaviour a user relies on that a one-line change to ``calls/retry.py``, ``calls/road.py`` or
``calls/numbers.py`` broke with every test still passing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given

from debate_engine.calls import limits, road
from debate_engine.calls.buckets import InProcess
from debate_engine.calls.limits import Asked, Held, RateLimits
from debate_engine.calls.numbers import whole_number
from debate_engine.calls.retry import retry_wait, server_wait, should_retry
from tests.support.openai_server import OpenAIServer
from tests.test_positions_exact import finite, spellings
from tests.test_road_retries import status_error


@pytest.fixture
def limited() -> Iterator[None]:
    """Hold run ``r`` on the fake model to 10 requests and 1,000 tokens an hour; leave no limit behind."""
    limits.forget()
    hour = RateLimits(models={"fake": {"rpm": 10, "tpm": 1000}}, providers={}, period_s=3600)
    limits.declare("r", hour)
    yield
    limits.forget()


def taken() -> dict[str, float]:
    """Return what the model's buckets hold: ``requests`` and ``tokens``."""
    store = limits.LIMITER.store
    assert isinstance(store, InProcess)
    return {name.split(":")[-2]: level for name, (level, _) in store.levels.items()}


def question(**overrides: Any) -> road.Request:
    fields: dict[str, Any] = {
        "models": ("fake",),
        "system": "You are terse.",
        "user": "Name a queue.",
        "temperature": 0.0,
        "max_tokens": 32,
        "timeout_s": 5.0,
        "run": "r",
    }
    return road.Request(**{**fields, **overrides})


def answer(call: road.Request, sync: bool) -> road.Answer:
    return road.ask(call) if sync else asyncio.run(road.aask(call))


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Put the machine five hours behind UTC for the test, and back after it."""
    monkeypatch.setenv("TZ", "EST+5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_model_failing_with_a_5xx_is_asked_four_times_as_the_client_did() -> None:
    """The first request and three retries; the fourth failure goes to the next model."""
    failed = status_error(500, {})
    asked = [retry_wait(failed, retries, left_s=60.0) is not None for retries in range(4)]
    assert asked == [True, True, True, False]


def test_a_server_that_says_retry_now_is_asked_again_at_once() -> None:
    """A 503 with ``Retry-After: 0`` (or ``retry-after-ms: 0``) is asked again without the back-off."""
    now = status_error(503, {"Retry-After": "0"})
    assert (
        server_wait(now) == 0.0 and server_wait(status_error(503, {"retry-after-ms": "0"})) == 0.0
    )
    assert retry_wait(now, 0, left_s=10.0) == 0.0


def test_a_negative_wait_is_no_wait_the_server_asked_for_the_back_off_holds() -> None:
    for said in ({"Retry-After": "-1"}, {"Retry-After": "-0.5"}, {"retry-after-ms": "-1"}):
        assert server_wait(status_error(503, said)) is None, said
        wait = retry_wait(status_error(503, said), 0, left_s=10.0)
        assert wait is not None and 0.25 <= wait <= 0.5, said


def test_a_wait_that_uses_the_whole_deadline_is_not_taken() -> None:
    """Waited out, it would leave no time to send the request in: the next model is asked at once."""
    asked = status_error(503, {"Retry-After": "2"})
    assert retry_wait(asked, 0, left_s=2.0) is None
    assert retry_wait(asked, 0, left_s=2.5) == 2.0


def test_a_4xx_other_than_a_timeout_a_lock_or_a_rate_limit_is_not_asked_again() -> None:
    """A request the server rejected as wrong is wrong again: asking it costs a request for nothing."""
    assert [should_retry(status_error(s, {})) for s in (403, 413, 451, 499)] == [False] * 4
    assert should_retry(status_error(500, {}))


def test_a_retry_after_date_is_read_in_its_own_zone_whatever_the_machine_s(zone: None) -> None:
    """An HTTP date names its zone: ``-0000`` is UTC with no zone of its own, ``+0200`` is two hours ahead."""
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    utc = status_error(429, {"Retry-After": "Fri, 02 Jan 2026 03:04:12 -0000"})
    ahead = status_error(429, {"Retry-After": "Fri, 02 Jan 2026 05:04:12 +0200"})
    assert server_wait(utc, now=lambda: now) == 7.0
    assert server_wait(ahead, now=lambda: now) == 7.0


@given(finite)
def test_an_answer_s_number_key_is_its_exact_value_written_out(value: Decimal) -> None:
    """The key a vote compares and checkpoints (its ballot's ``key``) reads back as the number the model wrote,
    sign and magnitude, however it was spelled."""
    for text in spellings(value):
        key = whole_number(text)
        assert key is not None and Decimal(key) == value, (text, key)


@pytest.mark.parametrize("sync", [True, False], ids=["ask", "aask"])
def test_a_request_whose_rate_limit_wait_ends_past_its_deadline_is_neither_sent_nor_charged(
    monkeypatch: pytest.MonkeyPatch, limited: None, sync: bool
) -> None:
    """The limiter lets a request go at a time within its deadline; a loaded machine wakes up after it. Sent
    then, it would be abandoned at once and charged its prompt and whole allowance as estimated; unsent, it is
    given back to the model's requests per period too."""
    reserve, areserve = road.reserve, road.areserve

    def late(asked: Asked, left_s: float) -> Held:
        held = reserve(asked, left_s)
        time.sleep(left_s + 0.05)
        return held

    async def alate(asked: Asked, left_s: float) -> Held:
        held = await areserve(asked, left_s)
        await asyncio.sleep(left_s + 0.05)
        return held

    # a first call builds what every call shares (the fake model's module, the road's pools): on a model no
    # limit holds, so that the call measured reaches the limiter with its deadline still ahead of it
    answer(question(models=("fake:words=5",)), sync)
    monkeypatch.setattr(road, "reserve", late)
    monkeypatch.setattr(road, "areserve", alate)
    with pytest.raises(road.CallFailed) as failed:
        answer(question(timeout_s=0.2), sync)
    [attempt] = failed.value.attempts
    assert (attempt["outcome"], attempt["usage"]) == ("timeout", None), attempt.get("error")
    assert taken() == {"requests": 0.0, "tokens": 0.0}


@pytest.mark.parametrize("sync", [True, False], ids=["ask", "aask"])
def test_a_request_s_tokens_are_settled_to_the_usage_it_reported(limited: None, sync: bool) -> None:
    """The model's tokens per period hold what it billed, so the next request waits as the provider counts."""
    [attempt] = answer(question(), sync).attempts
    assert attempt["usage"] and taken()["tokens"] == pytest.approx(
        attempt["usage"]["total_tokens"], abs=1
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with OpenAIServer(words=12) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-mutants")
        yield srv


@pytest.mark.parametrize("sync", [True, False], ids=["ask", "aask"])
def test_an_empty_answer_is_asked_again_at_once_within_a_deadline_under_a_second(
    server: OpenAIServer, sync: bool
) -> None:
    """Nothing waits before asking again for an empty answer (only a failed request backs off), and a
    deadline shorter than a second still sends its requests."""
    server.faults.extend(["empty"])
    got = answer(question(models=("openai:cheap",), timeout_s=0.9, run=""), sync)
    assert [a["outcome"] for a in got.attempts] == ["empty", "ok"] and got.text


def test_a_429_that_asks_for_a_few_ms_backs_off_and_many_refusals_never_overflow() -> None:
    """A server answering 429 with ``retry-after-ms: 5`` is not asked again every 5 ms to the deadline, and the
    thousandth refusal still waits the longest back-off (``2.0**1024`` would overflow)."""
    tiny = status_error(429, {"retry-after-ms": "5"})
    assert all(0.25 <= (retry_wait(tiny, 0, left_s=60.0) or 0) <= 0.5 for _ in range(20))
    assert all(
        0.25 <= (retry_wait(tiny, 0, left_s=60.0, refusals=6) or 0) <= 0.5 for _ in range(20)
    )
    silent = status_error(429, {})
    assert 4.0 <= (retry_wait(silent, 0, left_s=60.0, refusals=2000) or 0) <= 8.0
    slow = status_error(429, {"Retry-After": "3"})
    assert retry_wait(slow, 0, left_s=60.0, refusals=5) == 3.0  # a wait the server names is kept
