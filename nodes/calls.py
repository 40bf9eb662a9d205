"""Model calls as LangGraph tasks: one planned call in, one reply out, and the turns made from them.

A task's result is written to the checkpoint as soon as it finishes, so a
resumed phase re-runs only the calls that had not finished. The prompt is the
task's argument and is never stored. The calls to one provider are limited by
a semaphore inside the task, and each call is announced as it finishes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.func import task
from pydantic import BaseModel

from debate_engine.graph.state import AgentProfile, ConversationState
from debate_engine.memory import Turn, TurnView, Usage, count_tokens, new_turn, usage_of
from debate_engine.memory.records import TurnKind
from debate_engine.nodes.spend import worst_case
from debate_engine.nodes.status import emit
from debate_engine.providers.errors import ProviderError, is_provider_error, provider_error
from debate_engine.providers.factory import chat_model, loop_token, provider_of


@dataclass(frozen=True)
class Call:
    """One planned model call: who, for which turn, and the finished prompt."""

    agent: AgentProfile
    kind: TurnKind
    round: int
    target: str | None
    system: str
    user: str
    view: TurnView
    limit: int
    """Most calls at once to this agent's provider (0: no limit)."""
    schema: type[BaseModel] | None = None
    """Ask for this structured output, falling back to plain text."""
    retry_empty: bool = True
    """Retry an empty reply once (off when a spend cap has no room for the retry)."""
    unseen: tuple[int, int] | None = None
    """Turns from ``seq`` [0] up to [1] that neither the summary nor the view holds (summaries failing)."""

    def reserve(self) -> list[tuple[str, int, int]]:
        """The most this call may spend: ``(model spec, input tokens, output tokens)``."""
        return [(self.agent["model"], *worst_case(self.view["prompt_tokens"], self.agent["max_output_tokens"]))]

    def without_retries(self) -> Call:
        """The same call with no retry of an empty reply (when the spend cap has no room for one)."""
        return dataclasses.replace(self, retry_empty=False)

    def charge(self, reply: Reply) -> tuple[str, str, str, Usage]:
        """What the call spent: the provider's usage, else our own count."""
        usage = reply["usage"] or Usage(input_tokens=self.view["prompt_tokens"],
                                        output_tokens=count_tokens(reply["content"]), total_tokens=0)
        return self.agent["id"], PHASE_OF.get(self.kind, self.kind), reply["model"], usage


class Reply(TypedDict):
    """What a call returned: stored as the task's result."""

    agent_id: str
    kind: str
    content: str
    parsed: dict[str, Any] | None
    usage: Usage | None
    latency_ms: int
    truncated: bool
    model: str


def _chain(call: Call, build: Callable[[Any], Runnable[Any, Any]], loop: int | None) -> Runnable[Any, Any]:
    """The agent's model, then its fallbacks, each built into a runnable by ``build``."""
    agent = call.agent
    runnables = [
        # The client retries 5xx, 429 and dropped connections itself; a 200 whose body is not
        # JSON it raises at once, so that one is retried here the same way.
        build(chat_model(spec, temperature=agent["temperature"], max_tokens=agent["max_output_tokens"],
                         timeout_s=agent["timeout_s"], loop=loop))
        .with_retry(retry_if_exception_type=(json.JSONDecodeError,), stop_after_attempt=3)
        for spec in (agent["model"], *agent["fallback_models"])
    ]
    return runnables[0].with_fallbacks(runnables[1:]) if len(runnables) > 1 else runnables[0]


def _model(call: Call, loop: int | None = None) -> Runnable[Any, Any]:
    return _chain(call, lambda model: model, loop)


def _messages(call: Call) -> list[Any]:
    return [SystemMessage(call.system), HumanMessage(call.user)]


PHASE_OF = {"clarification": "clarify", "proposal": "propose", "critique": "critique", "refinement": "refine",
            "synthesis": "synthesize", "message": "turn", "moderation": "moderate"}
"""The node (phase) that makes each kind of turn: what stream metadata names."""


def _config(call: Call) -> RunnableConfig:
    phase = PHASE_OF.get(call.kind, call.kind)
    return {"tags": [call.agent["id"], phase],
            "metadata": {"agent_id": call.agent["id"], "phase": phase, "kind": call.kind, "round": call.round}}


def _structured(call: Call, loop: int | None = None) -> Runnable[Any, Any]:
    """Structured output with the raw message, falling back to plain text when it cannot be parsed."""
    schema = call.schema
    assert schema is not None

    def require(out: dict[str, Any]) -> dict[str, Any]:
        if out.get("parsed") is None:
            raise ValueError(f"unparsable structured output: {out.get('parsing_error')}")
        return out

    def build(model: Any) -> Runnable[Any, Any]:
        plain = model | RunnableLambda(lambda m: {"raw": m, "parsed": None})
        try:
            structured = model.with_structured_output(schema, method="function_calling", include_raw=True)
        except NotImplementedError:
            return plain
        return (structured | RunnableLambda(require)).with_fallbacks([plain], exceptions_to_handle=(ValueError,))

    return _chain(call, build, loop)


def _reply(call: Call, out: Any, started: float) -> Reply:
    raw, parsed = (out["raw"], out["parsed"]) if isinstance(out, dict) else (out, None)
    message = cast(AIMessage, raw)
    meta = getattr(message, "response_metadata", None) or {}
    return Reply(
        agent_id=call.agent["id"], kind=call.kind, content=message.text.strip() if message else "",
        parsed=parsed.model_dump() if isinstance(parsed, BaseModel) else None,
        usage=usage_of(message), latency_ms=int((time.perf_counter() - started) * 1000),
        truncated=meta.get("finish_reason") == "length", model=call.agent["model"],
    )


def _answered(reply: Reply) -> bool:
    """A reply with text, or with a structured answer (a tool call carries no text)."""
    return bool(reply["content"]) or reply["parsed"] is not None


def _check(call: Call, reply: Reply) -> Reply:
    """Fail an empty reply; announce a good one as soon as it arrives."""
    if not _answered(reply):
        raise ProviderError(f"{call.agent['id']} on {call.agent['model']}: the model returned an empty reply")
    emit({"event": "contribution", "kind": call.kind, "round": call.round, "agent_id": call.agent["id"],
          "target": call.target, "tokens": count_tokens(reply["content"]), "prompt_tokens": call.view["prompt_tokens"],
          "latency_ms": reply["latency_ms"], "truncated": reply["truncated"],
          "unseen": list(call.unseen) if call.unseen else None})
    return reply


LOCAL_SLOTS = 1
"""Requests the embedded llama.cpp server serves at once: more would only queue there and blur latency."""
_thread_limits: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_async_limits: dict[tuple[int, str, int], asyncio.Semaphore] = {}


def _limit_of(call: Call) -> tuple[str, int]:
    """The provider and its limit; the embedded server answers one request at a time."""
    provider = provider_of(call.agent["model"])
    return provider, call.limit or (LOCAL_SLOTS if provider == "local" else 0)


def _sync_limit(call: Call) -> threading.BoundedSemaphore | None:
    key = _limit_of(call)
    return _thread_limits.setdefault(key, threading.BoundedSemaphore(key[1])) if key[1] else None


def _async_limit(call: Call) -> asyncio.Semaphore | None:
    provider, limit = _limit_of(call)
    key = (loop_token(), provider, limit)
    return _async_limits.setdefault(key, asyncio.Semaphore(limit)) if limit else None


@task(name="model_call")  # type: ignore[arg-type]
def model_call(call: Call) -> Reply:
    """Run one call; an empty reply is retried once, then fails like any provider error."""
    limit = _sync_limit(call)
    runnable = _structured(call) if call.schema else _model(call)
    for attempt in range(2):
        try:
            if limit:
                limit.acquire()
            started = time.perf_counter()  # model time, without the wait for a slot
            out = runnable.invoke(_messages(call), config=_config(call))
        except Exception as exc:
            if is_provider_error(exc):
                raise provider_error(call.agent["id"], call.agent["model"], exc) from None
            raise
        finally:
            if limit:
                limit.release()
        reply = _reply(call, out, started)
        if _answered(reply) or attempt or not call.retry_empty:
            return _check(call, reply)
    raise AssertionError("unreachable")


async def _deadline(call: Call, runnable: Runnable[Any, Any]) -> Any:
    """One call, retries included, within the agent's timeout (the client's own applies per attempt)."""
    try:
        return await asyncio.wait_for(runnable.ainvoke(_messages(call), config=_config(call)), call.agent["timeout_s"])
    except TimeoutError:
        raise TimeoutError(f"no answer within {call.agent['timeout_s']:.0f} s (the agent's timeout)") from None


@task(name="model_call")  # type: ignore[arg-type]
async def amodel_call(call: Call) -> Reply:
    """The async twin of :func:`model_call`: cancellable while the request is in flight."""
    limit = _async_limit(call)  # taken before any await: the calls of a phase queue in their planned order
    loop = loop_token()
    for attempt in range(2):
        try:
            if limit:
                async with limit:
                    out, started = await _attempt(call, loop)
            else:
                out, started = await _attempt(call, loop)
        except Exception as exc:
            if is_provider_error(exc):
                raise provider_error(call.agent["id"], call.agent["model"], exc) from None
            raise
        reply = _reply(call, out, started)
        if _answered(reply) or attempt or not call.retry_empty:
            return _check(call, reply)
    raise AssertionError("unreachable")


async def _attempt(call: Call, loop: int) -> tuple[Any, float]:
    """One request, and when it started (model time, without the wait for a slot)."""
    # Building a model may start the embedded server or load TLS certificates: blocking, so in a thread.
    runnable = await asyncio.to_thread(_structured if call.schema else _model, call, loop)
    started = time.perf_counter()
    return await _deadline(call, runnable), started


def record_turns(state: ConversationState, calls: Sequence[Call], replies: Sequence[Reply]) -> list[Turn]:
    """Turn replies into transcript turns, numbered after the transcript."""
    start = len(state.get("transcript", []))
    turns = []
    for i, (call, reply) in enumerate(zip(calls, replies, strict=True)):
        if reply["agent_id"] != call.agent["id"] or reply["kind"] != call.kind:
            raise RuntimeError(f"task result for {reply['agent_id']}/{reply['kind']} where "
                               f"{call.agent['id']}/{call.kind} was planned; the phase's plan is not deterministic")
        turn = new_turn(
            start + i, kind=call.kind, round_no=call.round, speaker=call.agent["id"], role=call.agent["role"],
            content=reply["content"], target=call.target, model=reply["model"], usage=reply["usage"],
            latency_ms=reply["latency_ms"], view=call.view, truncated=reply["truncated"],
        )
        turns.append(turn)
    return turns
