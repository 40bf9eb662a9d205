"""The fake model's streaming: its reply handed out a few words at a time, as a real model's tokens.

A real chat model streams when a streaming handler listens (LangGraph's
``messages`` stream mode: Studio's, the viewer's own runs), and only then; the
fake does the same, so a page that shows a turn as it is written can be tested
offline. Every piece goes to the run's handlers as a chunk of one message (the
reply's id), the last one marked ``last``; the whole reply is still returned,
and with no streaming handler nothing changes: one sleep, one reply.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

LISTENER: type | None
"""How BaseChatModel itself tells a streaming listener (LangGraph's messages mode): it has no public name."""
try:
    from langchain_core.tracers._streaming import _StreamingCallbackHandler

    LISTENER = _StreamingCallbackHandler
except ImportError:  # moved in another version: the fake then never streams, as before it could
    LISTENER = None

PIECES = 8
"""How many pieces a streamed reply comes in, at most: each after its share of the latency."""


def streaming(run_manager: Any) -> bool:
    """Return whether a handler of this call streams tokens (how ``BaseChatModel`` decides to stream)."""
    handlers = getattr(run_manager, "handlers", None) or []
    return LISTENER is not None and any(isinstance(h, LISTENER) for h in handlers)


def pieces(text: str, count: int = PIECES) -> list[str]:
    """Return ``text`` cut at spaces into at most ``count`` pieces that join back to it exactly."""
    words = text.split(" ")
    size = max(1, -(-len(words) // count))
    cut = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [part if i == 0 else " " + part for i, part in enumerate(cut)]


def _chunks(reply: AIMessage, run_id: str) -> Iterator[ChatGenerationChunk]:
    parts = pieces(str(reply.content))
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        message = AIMessageChunk(content=part, id=run_id, chunk_position="last" if last else None)
        yield ChatGenerationChunk(message=message)


def stream(run_manager: Any, reply: AIMessage, seconds: float) -> AIMessage:
    """Hand ``reply`` to the handlers piece by piece over ``seconds``; return it with the stream's id."""
    run_id = f"lc_run--{run_manager.run_id}"
    parts = list(_chunks(reply, run_id))
    for chunk in parts:
        time.sleep(seconds / len(parts))
        run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
    reply.id = run_id  # the stream's message: LangGraph does not send the whole reply again
    return reply


async def astream(run_manager: Any, reply: AIMessage, seconds: float) -> AIMessage:
    """Do what :func:`stream` does, awaiting the handlers."""
    run_id = f"lc_run--{run_manager.run_id}"
    parts = list(_chunks(reply, run_id))
    for chunk in parts:
        await asyncio.sleep(seconds / len(parts))
        await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
    reply.id = run_id
    return reply
