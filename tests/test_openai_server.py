"""The loopback OpenAI server behaves like the real API for the real `openai` and `langchain_openai` clients.

Other tests trust this server to stand in for a provider, so its wire format, structured-output replies and
every injected fault are checked here against the actual client libraries, not against our own parsing.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from tests.support.openai_server import OpenAIServer

KEY = "sk-test-secret-123456"
MESSAGES: list[Any] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name three rivers please"},
]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(words=12) as srv:
        yield srv


def client(server: OpenAIServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, **kwargs)


def chat(server: OpenAIServer, **kwargs: Any) -> ChatOpenAI:
    kwargs.setdefault("max_retries", 0)
    return ChatOpenAI(model="test-model", base_url=server.base_url, api_key=KEY, **kwargs)


def post(server: OpenAIServer, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status, dict(response.headers), response.read()


class Verdict(BaseModel):
    summary: str
    reasons: list[str]
    score: int = Field(ge=0, le=100)


class Claim(BaseModel):
    text: str
    confidence: float = Field(ge=0, le=0.5)


class Ruling(BaseModel):
    winner: Claim
    claims: list[Claim]
    settled: bool
    rounds: int = Field(ge=10, le=20)
    note: str | None = None


def test_normal_reply_exact_shape_and_usage(server: OpenAIServer) -> None:
    status, headers, raw = post(server, {"model": "m-1", "messages": MESSAGES})
    reply = json.loads(raw)
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert set(reply) == {"id", "object", "created", "model", "choices", "usage"}
    assert (
        reply["object"] == "chat.completion"
        and reply["model"] == "m-1"
        and reply["id"].startswith("chatcmpl-")
    )
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["choices"][0]["message"]["role"] == "assistant"
    assert len(reply["choices"][0]["message"]["content"].split()) == 12
    assert reply["usage"] == {"prompt_tokens": 7, "completion_tokens": 12, "total_tokens": 19}


def test_reply_is_deterministic_per_prompt_and_usage_totals(server: OpenAIServer) -> None:
    api = client(server)
    first = api.chat.completions.create(model="m", messages=MESSAGES)
    again = api.chat.completions.create(model="m", messages=MESSAGES)
    other = api.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Something else"}]
    )
    assert first.choices[0].message.content == again.choices[0].message.content
    assert first.choices[0].message.content != other.choices[0].message.content
    assert first.usage is not None and first.usage.total_tokens == 19
    assert server.usage_total() == 19 + 19 + (2 + 12)


def test_models_endpoint_lists_one_model(server: OpenAIServer) -> None:
    assert [m.id for m in client(server).models.list()] == ["test-model"]


def test_max_tokens_cuts_reply(server: OpenAIServer) -> None:
    reply = client(server).chat.completions.create(model="m", messages=MESSAGES, max_tokens=5)
    assert reply.choices[0].finish_reason == "length"
    assert len((reply.choices[0].message.content or "").split()) == 5
    assert reply.usage is not None and reply.usage.completion_tokens == 5


def test_streaming_with_usage_matches_plain_reply(server: OpenAIServer) -> None:
    api = client(server)
    plain = api.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content
    chunks = list(
        api.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 19


def test_raw_sse_framing(server: OpenAIServer) -> None:
    status, headers, raw = post(server, {"model": "m", "messages": MESSAGES, "stream": True})
    events = raw.decode().split("\n\n")
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert events[-2:] == ["data: [DONE]", ""]
    assert all(e.startswith("data: ") for e in events[:-1])
    assert json.loads(events[0][6:])["object"] == "chat.completion.chunk"
    assert "usage" not in json.loads(
        events[0][6:]
    )  # only sent when stream_options.include_usage asks


def test_langchain_stream_usage(server: OpenAIServer) -> None:
    chunks = list(chat(server, stream_usage=True).stream("Name three rivers please"))
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert len(str(total.content).split()) == 12
    assert total.usage_metadata is not None and total.usage_metadata["total_tokens"] == 4 + 12


def test_structured_output_function_calling(server: OpenAIServer) -> None:
    result = (
        chat(server)
        .with_structured_output(Verdict, method="function_calling")
        .invoke("Judge the debate.")
    )
    assert isinstance(result, Verdict)
    assert result.score == 7 and len(result.reasons) == 2 and all(result.reasons) and result.summary
    body = server.requests[-1]["body"]
    assert body["tool_choice"]["function"]["name"] == "Verdict"
    assert server.usage_total() > 0


def test_structured_output_follows_refs_and_bounds(server: OpenAIServer) -> None:
    result = chat(server).with_structured_output(Ruling, method="function_calling").invoke("Rule.")
    assert isinstance(result, Ruling)
    assert result.rounds == 10  # 7 raised to the minimum
    assert result.winner.confidence == 0.5  # 0.7 lowered to the maximum
    assert len(result.claims) == 2 and result.settled is True and result.note


def test_streamed_tool_call(server: OpenAIServer) -> None:
    structured = chat(server, streaming=True).with_structured_output(
        Verdict, method="function_calling"
    )
    result = structured.invoke("Judge the debate.")
    assert isinstance(result, Verdict) and result.score == 7
    assert server.requests[-1]["body"]["stream"] is True


def test_429_rate_limit(server: OpenAIServer) -> None:
    server.faults.append("429")
    with pytest.raises(openai.RateLimitError) as caught:
        client(server).chat.completions.create(model="m", messages=MESSAGES)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.code == "rate_limit_exceeded"
    assert server.requests[0]["fault"] == "429" and server.usage_total() == 0


@pytest.mark.parametrize("status", ["500", "503"])
def test_5xx(server: OpenAIServer, status: str) -> None:
    server.faults.append(status)
    with pytest.raises(openai.InternalServerError) as caught:
        client(server).chat.completions.create(model="m", messages=MESSAGES)
    assert caught.value.status_code == int(status)
    # the fault was consumed: the next request succeeds
    assert (
        client(server)
        .chat.completions.create(model="m", messages=MESSAGES)
        .choices[0]
        .message.content
    )


def test_malformed_json(server: OpenAIServer) -> None:
    server.faults.append("malformed")
    with pytest.raises(json.JSONDecodeError):
        chat(server).invoke("hello")
    assert server.usage_total() == 0


def test_drop_connection(server: OpenAIServer) -> None:
    server.faults.append("drop")
    with pytest.raises(openai.APIConnectionError) as caught:
        client(server).chat.completions.create(model="m", messages=MESSAGES)
    assert not isinstance(caught.value, openai.APITimeoutError)


def test_hang_times_out_and_exit_is_prompt() -> None:
    # The threads of this test, not their count: a thread an earlier test left in this worker may end meanwhile.
    baseline = set(threading.enumerate())
    with OpenAIServer(hang_s=30) as srv:
        srv.always = "hang"
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            client(srv, timeout=0.5).chat.completions.create(model="m", messages=MESSAGES)
        assert time.monotonic() - started < 3
        exiting = time.monotonic()
    assert (
        time.monotonic() - exiting < 1.5
    )  # the handler still sleeping in "hang" does not block shutdown
    deadline = time.monotonic() + 1
    while set(threading.enumerate()) - baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (
        set(threading.enumerate()) - baseline == set()
    )  # shutdown woke the hanging handler; its thread ended


def test_empty_reply(server: OpenAIServer) -> None:
    server.faults.append("empty")
    message = chat(server).invoke("hello")
    assert message.content == ""
    assert message.usage_metadata is not None and message.usage_metadata["output_tokens"] == 0


def test_length_fault(server: OpenAIServer) -> None:
    server.faults.append("length")
    message = chat(server).invoke("hello")
    assert message.response_metadata["finish_reason"] == "length"
    assert len(str(message.content).split()) == 6


def test_echo_key_leaks_into_error(server: OpenAIServer) -> None:
    server.faults.append("echo_key")
    with pytest.raises(openai.AuthenticationError) as caught:
        chat(server).invoke("hello")
    assert KEY in str(caught.value)


def test_always_applies_until_cleared(server: OpenAIServer) -> None:
    server.always = "503"
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            client(server).chat.completions.create(model="m", messages=MESSAGES)
    server.always = None
    assert (
        client(server)
        .chat.completions.create(model="m", messages=MESSAGES)
        .choices[0]
        .finish_reason
        == "stop"
    )
    assert [r["fault"] for r in server.requests] == ["503", "503", None]


def test_client_retries_through_queued_faults(server: OpenAIServer) -> None:
    server.retry_after = 0.1  # the client honours Retry-After; keep the test fast
    server.faults.extend(["429", "500"])
    reply = client(server, max_retries=2).chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].finish_reason == "stop"
    assert len(server.requests) == 3
    assert [r["fault"] for r in server.requests] == ["429", "500", None]
    assert server.usage_total() == 19  # only the successful reply counts


def test_requests_record_bodies_headers_and_prompts(server: OpenAIServer) -> None:
    chat(server).invoke([("system", "Be brief."), ("human", "Compare Raft and Paxos")])
    record = server.requests[0]
    assert record["path"] == "/v1/chat/completions"
    assert record["headers"]["authorization"] == f"Bearer {KEY}"
    assert record["body"]["model"] == "test-model"
    assert record["body"]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Compare Raft and Paxos"},
    ]
    assert record["fault"] is None and record["time"] <= time.time()
    assert server.prompts() == ["Be brief.\nCompare Raft and Paxos"]
