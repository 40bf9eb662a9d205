"""The road retries; the client does not: every request the server sees is an attempt, counted and charged.

Measured at the loopback OpenAI-compatible server (``tests/support/openai_server.py``), which records each
request with the time it arrived. Before, the OpenAI client re-sent failed requests itself (3 times): the
road saw one attempt, the cap none of the re-sends, and under ``invoke`` a request the road had given up at
its deadline went on being re-sent from its helper thread after the call had failed.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import openai
import pytest

from debate_engine import Context, compile_debate
from debate_engine.calls.retry import RETRIES, backoff, server_wait, should_retry
from debate_engine.calls.road import CallFailed, Request, aask, ask
from tests.support.openai_server import OpenAIServer

CHEAP, DEAR = "openai:cheap", "openai:dear"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with OpenAIServer(words=12, hang_s=30.0) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-retries")
        yield srv


def chats(server: OpenAIServer, model: str | None = None) -> list[dict[str, Any]]:
    return [
        r
        for r in server.requests
        if r["path"].split("?")[0].endswith("/chat/completions")
        and (model is None or (r["body"] or {}).get("model") == model)
    ]


def config(tmp_path: Path, fallback: bool = True) -> str:
    agent: dict[str, Any] = {"model": CHEAP, **({"fallbackModels": [DEAR]} if fallback else {})}
    doc = {
        "agents": [
            {"id": "kiss", "role": "kiss", **agent},
            {"id": "security", "role": "security", **agent},
        ],
        "judge": {"role": "generalist", **agent},
        "debate": {"rounds": 1},
    }
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(doc))
    return str(path)


def run(path: str, sync: bool, **context: Any) -> dict[str, Any]:
    graph, cfg = compile_debate(), {"configurable": {"thread_id": "t"}}
    args = ({"problem": "Design a rate limiter"}, cfg)
    settings = Context(config_file=path, summarize=False, **context)
    if sync:
        return graph.invoke(*args, context=settings)
    return asyncio.run(graph.ainvoke(*args, context=settings))


def next_of(sent: list[dict[str, Any]], first: dict[str, Any]) -> dict[str, Any]:
    """Return the next request that asks what ``first`` asked (the slot is free while a retry waits: another
    call's request may come in between)."""
    later = sent[sent.index(first) + 1 :]
    return next(r for r in later if r["body"]["messages"] == first["body"]["messages"])


def attempts(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for t in values["transcript"] for a in t.get("attempts") or []]


def request(**overrides: Any) -> Request:
    fields: dict[str, Any] = {
        "models": (CHEAP,),
        "system": "You are terse.",
        "user": "Name a queue.",
        "temperature": 0.0,
        "max_tokens": 32,
        "timeout_s": 10.0,
    }
    return Request(**{**fields, **overrides})


def test_a_request_abandoned_at_its_deadline_is_sent_once_under_invoke(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.model_always["cheap"] = "hang"
    values = run(config(tmp_path), sync=True, timeout_s=1.0)
    assert values["solution"], "the fallback answered every call"
    time.sleep(2.0)  # the client used to time out with the road, back off 0.5 s and send it again
    hung = chats(server, "cheap")
    timeouts = [a for a in attempts(values) if a["outcome"] == "timeout"]
    assert timeouts and all(a["model"] == CHEAP for a in timeouts)
    assert len(hung) == len(timeouts), "a request the road gave up on was sent again"
    sent = Counter(json.dumps(r["body"], sort_keys=True) for r in hung)
    assert max(sent.values()) == 1


@pytest.mark.parametrize("sync", [True, False], ids=["invoke", "ainvoke"])
def test_a_429_then_a_reply_is_two_attempts_the_second_after_retry_after(
    server: OpenAIServer, tmp_path: Path, sync: bool
) -> None:
    server.retry_after = (
        1.0  # sent as "Retry-After: 1"; the road's own first back-off is at most 0.5 s
    )
    server.faults.extend(["429"])
    values = run(config(tmp_path, fallback=False), sync=sync, max_concurrency=1)
    assert values["solution"]
    sent = chats(server)
    refused = sent[0]
    again = next_of(sent, refused)
    assert refused["fault"] == "429" and again["body"] == refused["body"] and not again["fault"]
    assert again["time"] - refused["time"] >= 1.0, "the retry did not wait what Retry-After said"
    retried = [t for t in values["transcript"] if len(t.get("attempts") or []) > 1]
    assert len(retried) == 1
    first, second = retried[0]["attempts"]
    assert first["outcome"] == "failed" and "429" in first["error"] and first["usage"] is None
    assert second["outcome"] == "ok" and second["usage"]
    spend = values["spend"]["total"]
    assert spend["calls"] == len(sent) - 1, "the refused request billed nothing"
    assert spend["input_tokens"] + spend["output_tokens"] == server.usage_total()


@pytest.mark.parametrize("sync", [True, False], ids=["invoke", "ainvoke"])
def test_a_wait_longer_than_the_deadline_is_not_taken_the_fallback_is_asked(
    server: OpenAIServer, tmp_path: Path, sync: bool
) -> None:
    server.retry_after = 30.0
    server.faults.extend(["429"])
    values = run(config(tmp_path), sync=sync, max_concurrency=1, timeout_s=3.0)
    assert values["solution"]
    sent = chats(server)
    refused = sent[0]
    fallback = next_of(sent, refused)
    assert refused["fault"] == "429" and fallback["body"]["model"] == "dear"
    assert fallback["time"] - refused["time"] < 3.0, "the road slept past the model's deadline"
    # the 429 paused the model for every call (calls.limits): the six others were not sent to it either
    assert len(chats(server, "cheap")) == 1, "a call walked into the pause the server asked for"
    paused = [a for a in attempts(values) if a["error"] and "RateLimited" in a["error"]]
    assert len(paused) == 6 and all(a["usage"] is None for a in paused)
    first, second = next(
        t["attempts"]
        for t in values["transcript"]
        if (t.get("attempts") or paused)[0] not in paused
    )
    assert (first["model"], first["outcome"], first["usage"]) == (CHEAP, "failed", None)
    assert "429" in first["error"] and (second["model"], second["outcome"]) == (DEAR, "ok")


@pytest.mark.parametrize("fault", ["429", "500", "503", "drop", "malformed"])
@pytest.mark.parametrize("sync", [True, False], ids=["ask", "aask"])
def test_the_road_asks_again_what_may_pass_and_records_each_request(
    server: OpenAIServer, fault: str, sync: bool
) -> None:
    server.retry_after = 0.0
    server.faults.extend([fault])
    call = request()
    answer = ask(call) if sync else asyncio.run(aask(call))
    assert [a["outcome"] for a in answer.attempts] == ["failed", "ok"]
    assert answer.attempts[0]["usage"] is None and len(chats(server)) == 2


@pytest.mark.parametrize("sync", [True, False], ids=["ask", "aask"])
def test_a_model_failing_every_time_is_asked_four_times_with_a_growing_back_off(
    server: OpenAIServer, sync: bool
) -> None:
    server.always = "500"
    call = request()
    with pytest.raises(CallFailed) as failed:
        ask(call) if sync else asyncio.run(aask(call))
    sent = chats(server)
    assert len(sent) == len(failed.value.attempts) == 1 + RETRIES
    gaps = [b["time"] - a["time"] for a, b in zip(sent, sent[1:], strict=False)]
    assert [g >= 0.25 * 2**i for i, g in enumerate(gaps)] == [True] * RETRIES, gaps


def test_a_retry_of_a_request_that_billed_nothing_is_not_refused_by_the_cap(
    server: OpenAIServer,
) -> None:
    server.retry_after = 0.0
    server.faults.extend(["500", "429"])
    answer = ask(request(max_requests=1))
    assert [a["outcome"] for a in answer.attempts] == ["failed", "failed", "ok"]
    assert sum(a["usage"] is not None for a in answer.attempts) == 1


def test_retries_stop_at_the_deadline_whatever_the_server_says(server: OpenAIServer) -> None:
    server.retry_after = 0.6  # the loopback server sends Retry-After with its 429s only
    server.always = "429"
    with pytest.raises(CallFailed) as failed:
        ask(request(timeout_s=1.0))
    sent = chats(server)
    assert (
        len(failed.value.attempts) == len(sent) == 2
    )  # a wait of 0.6 s fits once in 1 s, not twice
    assert 0.6 <= sent[1]["time"] - sent[0]["time"] < 1.0


def status_error(status: int, headers: dict[str, str]) -> openai.APIStatusError:
    """Return the error the client raises for a response of ``status`` with ``headers``."""
    library = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])
    url = "http://127.0.0.1/v1/chat/completions"
    response = library.Response(status, headers=headers, request=library.Request("POST", url))
    return openai.APIStatusError("refused", response=response, body=None)


def test_the_server_s_wait_is_read_in_milliseconds_seconds_or_as_an_http_date() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    date = format_datetime(datetime.fromtimestamp(now + 7, UTC), usegmt=True)
    assert server_wait(status_error(429, {"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert server_wait(status_error(429, {"Retry-After": "2"})) == 2.0
    assert server_wait(status_error(503, {"Retry-After": date}), now=lambda: now) == 7.0
    assert server_wait(status_error(503, {"Retry-After": date}), now=lambda: now + 60) == 0.0
    assert server_wait(status_error(429, {"Retry-After": "soon"})) is None
    assert server_wait(status_error(429, {"Retry-After": "-3"})) is None
    assert server_wait(status_error(429, {})) is None


def test_what_is_asked_again_is_what_the_client_used_to_retry() -> None:
    statuses = {s: should_retry(status_error(s, {})) for s in (400, 401, 404, 408, 409, 422, 429)}
    assert statuses == {
        400: False,
        401: False,
        404: False,
        408: True,
        409: True,
        422: False,
        429: True,
    }
    assert all(should_retry(status_error(s, {})) for s in (500, 502, 503, 504))
    assert should_retry(status_error(400, {"x-should-retry": "true"}))
    assert not should_retry(status_error(503, {"x-should-retry": "false"}))
    assert not should_retry(TimeoutError("no answer within 1 s (the model's deadline)"))
    assert not should_retry(ValueError("a bug"))
    draws = [backoff(n, lambda: 1.0) for n in range(6)]
    assert draws == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0] and backoff(0, lambda: 0.0) == 0.25
