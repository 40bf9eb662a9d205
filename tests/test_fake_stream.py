"""The fake model streams to a streaming listener, as a real chat model does, and to nobody else."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers._streaming import _StreamingCallbackHandler

from debate_engine.providers.fake import FakeChatModel
from debate_engine.providers.fake_stream import PIECES, pieces


@given(st.text(alphabet=st.sampled_from("ab ."), max_size=200))
def test_pieces_join_back_to_the_text_and_are_few(text: str) -> None:
    cut = pieces(text)
    assert "".join(cut) == text
    assert 1 <= len(cut) <= PIECES


def test_a_short_reply_streams_word_by_word_and_a_long_one_in_as_many_pieces_as_allowed() -> None:
    assert pieces("Use a queue") == ["Use", " a", " queue"]
    words = " ".join(f"w{i}" for i in range(40))
    assert len(pieces(words)) == PIECES == 8  # five words each


class Tokens(BaseCallbackHandler, _StreamingCallbackHandler):
    """A streaming listener: what LangGraph's messages mode attaches."""

    def __init__(self) -> None:
        self.chunks: list[Any] = []

    def on_llm_new_token(self, token: str, *, chunk: Any = None, **kwargs: Any) -> None:
        self.chunks.append(chunk)

    def tap_output_aiter(self, run_id: Any, output: Any) -> Any:
        return output

    def tap_output_iter(self, run_id: Any, output: Any) -> Any:
        return output


class Plain(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tokens = 0

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.tokens += 1


def test_a_streaming_listener_gets_the_reply_in_pieces_of_one_message_the_last_marked() -> None:
    model = FakeChatModel(words=40)
    quiet = model.invoke("Pick a queue")
    listener = Tokens()
    streamed = model.invoke("Pick a queue", config={"callbacks": [listener]})
    assert streamed.content == quiet.content  # the same words, streamed or not
    assert streamed.usage_metadata == quiet.usage_metadata
    assert len(listener.chunks) == PIECES
    assert "".join(str(c.message.content) for c in listener.chunks) == quiet.content
    assert {c.message.id for c in listener.chunks} == {streamed.id}
    assert [c.message.chunk_position for c in listener.chunks] == [None] * (PIECES - 1) + ["last"]


def test_a_streamed_reply_takes_the_latency_an_unstreamed_one_takes_half_thinking_half_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sleeps asked for, recorded instead of slept: no clock is read."""
    slept: list[float] = []

    async def asleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(time, "sleep", slept.append)
    monkeypatch.setattr(asyncio, "sleep", asleep)
    model = FakeChatModel(words=40, latency_ms=800)
    model.invoke("Pick a queue")
    assert slept == [0.8]
    slept.clear()
    model.invoke("Pick a queue", config={"callbacks": [Tokens()]})
    assert slept == [0.4] + [0.05] * PIECES
    slept.clear()
    asyncio.run(model.ainvoke("Pick a queue", config={"callbacks": [Tokens()]}))
    assert slept == [0.4] + [0.05] * PIECES


def test_the_async_path_streams_alike_and_a_plain_handler_gets_no_tokens() -> None:
    model = FakeChatModel(words=40)
    listener, plain = Tokens(), Plain()
    reply = asyncio.run(model.ainvoke("Pick a queue", config={"callbacks": [listener]}))
    assert "".join(str(c.message.content) for c in listener.chunks) == reply.content
    model.invoke("Pick a queue", config={"callbacks": [plain]})
    assert plain.tokens == 0
