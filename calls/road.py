"""The one road every model call takes: slot, rate limits, deadline, retries, fallbacks, parsing, usage, record.

Debater turns, summaries, the judge, the moderator, evaluators and the
probe's quiz all ask through :func:`ask` (or :func:`aask`), so each call is
limited by its run's provider slots and by its model's rate limits (``calls.limits``: every request takes one
request and its token estimate from the model's buckets before it is sent), bounded in time, retried, parsed by one
parser, and comes back with every attempt it took: the model that answered,
what each attempt cost as the provider counted it, and why an attempt was
thrown away. Charging prices each attempt by its own model.

The policy (what to try next) is one generator shared by the sync and the
async driver, so ``invoke`` and ``ainvoke`` behave alike. Fallbacks are run
here rather than with ``Runnable.with_fallbacks``: that hides which model
answered and drops the usage of the attempts it discards. Retries are run here
too, not by the provider's client (``calls.retry``): each request is an
attempt, counted, charged, held to the cap and to the deadline.

It is one module because the policy, its two drivers and each request's steps (slot, rate limits, deadline,
classification) share one Request, one Result and one Clock: split, each half would read the other's privates.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections import OrderedDict
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel
from typing_extensions import TypedDict

from debate_engine.calls.generators import resumed
from debate_engine.calls.limits import (
    Asked,
    Held,
    RateLimited,
    areserve,
    declare,
    pause,
    pause_after,
    reserve,
    settle,
    store_blocks,
)
from debate_engine.calls.markers import messages
from debate_engine.calls.parse import looks_cut, parse_structured, unclosed
from debate_engine.calls.rate_records import RateLimits
from debate_engine.calls.ratelimit_headers import headers_of
from debate_engine.calls.retry import client_timeout, rate_limited, retry_wait
from debate_engine.calls.schemas import tool_tokens
from debate_engine.calls.slots import aslot, hold, slot_limit
from debate_engine.calls.streamed import StreamedArguments, listened
from debate_engine.calls.usage import counted_usage, usage_of
from debate_engine.errors import ProviderError
from debate_engine.memory.records import Usage
from debate_engine.providers.factory import chat_model, loop_token, provider_of
from debate_engine.providers.failures import is_provider_error
from debate_engine.providers.secrets import redact

Outcome = Literal["ok", "cut", "empty", "unparsed", "failed", "timeout"]


class Attempt(TypedDict):
    """One request of a call, kept or thrown away."""

    model: str
    """The spec that was asked (a fallback's, when it answered)."""
    outcome: Outcome
    usage: Usage | None
    """As the provider counted it (our own count when it reports none); None when nothing came back."""
    latency_ms: int
    error: str | None


@dataclass(frozen=True)
class Request:
    """One model call: who answers, what they are asked, and within which limits."""

    models: tuple[str, ...]
    """The model, then its fallbacks in order."""
    system: str
    user: str
    temperature: float
    max_tokens: int
    timeout_s: float
    """Each model's deadline, the road's retries and their waits included; a fallback gets its own."""
    schema: type[BaseModel] | None = None
    prose_fallback: bool = True
    """When the structured answer does not parse (or was cut), ask the same model again in plain text;
    False hands the unparsed answer back (``parsed`` None) for the caller to decide."""
    retry_empty: bool = True
    """Ask a model once more when it returns nothing."""
    limit: int = 0
    """Most requests in flight to one provider for this run (0: no limit; the embedded server: one)."""
    run: str = ""
    """The debate run the slots belong to (its thread id)."""
    limits: RateLimits | None = field(default=None, hash=False, compare=False)
    """The rate limits the run's settings state: the request is held to them whichever process runs it
    (None: those declared for ``run``, or none)."""
    who: str = "model"
    """Who is asking, for error messages (an agent id)."""
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    max_requests: int = 0
    """Most billable requests the call may send, over all its models (0: as many as the policy takes); what a
    spend cap reserved for it. At the limit, an unparsed answer is handed back as it is and nothing is asked
    again. A request refused with an error bills nothing and does not count."""


def most_requests(structured: bool, retry_empty: bool) -> int:
    """Return the requests one call may send to one model: the answer, its prose fallback, an empty reply asked again."""
    return 1 + int(structured) + int(retry_empty)


@dataclass
class Answer:
    """What a call returned, with every attempt it took."""

    text: str
    parsed: dict[str, Any] | None
    model: str
    """The spec of the model that answered."""
    truncated: bool
    latency_ms: int
    """Model time of the attempt that answered (waits for a slot excluded)."""
    attempts: list[Attempt]
    clamped: list[str] = field(default_factory=list)
    """Fields of the structured answer clipped or clamped to fit its schema."""


class CallFailed(ProviderError):
    """Every model of a call failed; ``attempts`` says how (what was spent is in their usage)."""

    def __init__(self, message: str, attempts: list[Attempt]) -> None:
        super().__init__(message)
        self.attempts = attempts


class _Result(NamedTuple):
    attempt: Attempt | None
    """None: the model cannot answer in structured form (nothing was sent)."""
    text: str
    parsed: BaseModel | None
    truncated: bool
    failure: BaseException | None = None
    """The error the request failed with, read to decide whether to ask again."""


class Step(NamedTuple):
    """The next request: the model, whether in structured form, and how long to wait before sending it."""

    spec: str
    structured: bool
    wait_s: float = 0.0


def _policy(request: Request, clock: _Clock) -> Generator[Step, _Result, Answer]:
    """Each model in turn; within one, a failed request or a thrown-away answer is asked again as the request
    allows (a retry is held to the cap like any request; a refused one billed nothing)."""
    attempts: list[Attempt] = []
    for spec in request.models:
        structured, retry_empty = request.schema is not None, request.retry_empty
        retries, refusals, wait = 0, 0, 0.0
        while True:
            if _spent_all(request, attempts):
                break  # the cap reserved no more: nothing is asked that it cannot hold
            result = yield Step(spec, structured, wait)
            wait, again = 0.0, retry_wait(result.failure, retries, clock.left(spec), refusals)
            outcome = result.attempt["outcome"] if result.attempt else "unparsed"
            if result.attempt:
                attempts.append(result.attempt)
            at_limit = _spent_all(request, attempts)
            if (
                outcome == "unparsed"
                and (request.prose_fallback or not result.attempt)
                and not at_limit
            ):
                structured = False
            elif outcome in ("ok", "cut", "unparsed"):
                assert result.attempt is not None
                parsed = result.parsed.model_dump() if result.parsed is not None else None
                return Answer(
                    text=result.text,
                    parsed=parsed,
                    model=spec,
                    truncated=result.truncated,
                    latency_ms=result.attempt["latency_ms"],
                    attempts=attempts,
                    clamped=list(getattr(result.parsed, "clamped", []) or []),
                )
            elif outcome == "empty" and retry_empty:
                retry_empty = False
            elif again is not None and rate_limited(result.failure):
                # a 429 counts no retry: every run drawing on the model waits it out at the limiter, this one's
                # retry too, where the wait is told and recorded (calls.limits)
                refusals += 1
                pause(spec, again)
            elif again is not None:
                retries, wait = retries + 1, again
            else:
                break
    last = attempts[-1]["error"] if attempts else "no model to ask"
    raise CallFailed(
        redact(f"{request.who} on {', '.join(request.models)}: {last}")[:800], attempts
    )


def _spent_all(request: Request, attempts: list[Attempt]) -> bool:
    """Whether the call has sent every billable request its reserve holds (a refused request bills nothing)."""
    return (
        bool(request.max_requests)
        and sum(a["usage"] is not None for a in attempts) >= request.max_requests
    )


def _config(request: Request) -> RunnableConfig:
    return {"tags": list(request.tags), "metadata": dict(request.metadata)}


def _runnable(
    request: Request, spec: str, structured: bool, loop: int
) -> Runnable[Any, Any] | None:
    """Return the model for one request (None: it has no structured form)."""
    model = chat_model(
        spec,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        timeout_s=request.timeout_s,
        loop=loop,
    )
    if not (structured and request.schema is not None):
        return model
    return _structured(model, request.schema)


_STRUCTURED: OrderedDict[tuple[int, type[BaseModel]], tuple[object, Runnable[Any, Any] | None]] = (
    OrderedDict()
)
"""Each model's structured form per schema, least recently used first: building it writes the schema's JSON
(a few ms of CPU, taken while a wave's other requests wait for the interpreter), so it is built once and
reused, being stateless. Schemas are made once per shape (``lru_cache``), so the keys stay few."""
STRUCTURED_KEPT = 256


def _structured(model: BaseChatModel, schema: type[BaseModel]) -> Runnable[Any, Any] | None:
    """Return ``model`` bound to answer ``schema`` by a tool call."""
    key = (id(model), schema)
    kept = _STRUCTURED.get(key)
    if kept is not None and kept[0] is model:  # the entry keeps the model alive: its id is its own
        _STRUCTURED.move_to_end(key)
        return kept[1]
    runnable: Runnable[Any, Any] | None
    try:
        runnable = model.with_structured_output(schema, method="function_calling", include_raw=True)
    except NotImplementedError:
        runnable = None
    _STRUCTURED[key] = (model, runnable)
    while len(_STRUCTURED) > STRUCTURED_KEPT:
        _STRUCTURED.popitem(last=False)
    return runnable


def _result(
    request: Request,
    spec: str,
    structured: bool,
    out: Any,
    started: float,
    sent: bool = True,
    streamed: list[str] | None = None,
) -> _Result:
    """Classify what one request returned (a message, a structured dict or an error); ``streamed`` holds a
    streamed answer's raw tool-call arguments (``calls.streamed``), which show a cut its parsed message hides.

    A request abandoned at its deadline (the road's, or the client's own timeout) may still be answered, and
    billed, by the provider: it is charged as it may be billed (its prompt and its whole output allowance),
    marked ``estimated``. A failed one is not billed.
    """
    ms = int((time.perf_counter() - started) * 1000)
    if isinstance(out, BaseException):
        timed_out = isinstance(out, TimeoutError) or client_timeout(out)
        outcome: Outcome = "timeout" if timed_out else "failed"
        why = redact(f"{type(out).__name__}: {out}")[:500]
        usage = _abandoned(request) if outcome == "timeout" and sent else None
        attempt = Attempt(model=spec, outcome=outcome, usage=usage, latency_ms=ms, error=why)
        return _Result(attempt, "", None, False, failure=out)
    raw = out["raw"] if isinstance(out, dict) else out
    meta = getattr(raw, "response_metadata", None) or {}
    text = raw.text.strip() if raw is not None else ""
    cut_call = structured and any(unclosed(args) for args in streamed or [])
    cut = meta.get("finish_reason") == "length" or (structured and looks_cut(raw)) or cut_call
    calls = json.dumps([c.get("args") for c in getattr(raw, "tool_calls", None) or []])
    usage = usage_of(raw) or counted_usage(request.system + "\n" + request.user, text or calls)
    # With a schema, a plain answer is read for JSON too: small models often write it instead of a tool call.
    # A cut call closed by the streamed merge is no answer, as the same call unstreamed is not.
    given = out.get("parsed") if structured else None
    parsed = (
        parse_structured(request.schema, raw, given) if request.schema and not cut_call else None
    )
    error: str | None = None
    called = structured and (
        getattr(raw, "tool_calls", None) or getattr(raw, "invalid_tool_calls", None)
    )
    if (
        not text and parsed is None and not called
    ):  # a tool called where prose was asked is no answer either
        outcome, error = "empty", "the model returned an empty reply"
    elif structured and parsed is None:
        outcome, error = (
            "unparsed",
            "cut at the output limit" if cut else "the structured answer did not parse",
        )
    else:
        outcome = "cut" if cut else "ok"
    return _Result(
        Attempt(model=spec, outcome=outcome, usage=usage, latency_ms=ms, error=error),
        text,
        parsed,
        cut,
    )


def _abandoned(request: Request) -> Usage:
    """Return what a request abandoned at its deadline may be billed: its prompt (tools included) and all it may write."""
    prompt = counted_usage(request.system + "\n" + request.user, "")["input_tokens"]
    prompt += tool_tokens(request.schema) if request.schema is not None else 0
    return Usage(
        input_tokens=prompt,
        output_tokens=request.max_tokens,
        total_tokens=prompt + request.max_tokens,
        estimated=True,
    )


class _Clock:
    """Each model's deadline runs from its first request."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s, self.started = timeout_s, dict[str, float]()

    def left(self, spec: str) -> float:
        return self.timeout_s - (time.monotonic() - self.started.setdefault(spec, time.monotonic()))


def _provider_failure(exc: Exception) -> Exception:
    """Return a failed request the policy may route around (to the next model); any other error is a bug, raised."""
    if not is_provider_error(exc):
        raise exc
    return exc


def _timeout(request: Request) -> TimeoutError:
    return TimeoutError(f"no answer within {request.timeout_s:g} s (the model's deadline)")


def ask(request: Request) -> Answer:
    """Make the call from a thread (``invoke``); the deadline holds whatever the request does."""
    clock = _Clock(request.timeout_s)
    policy = _policy(request, clock)
    step = next(policy)
    while True:
        if step.wait_s > 0:
            time.sleep(step.wait_s)
        try:
            step = policy.send(_sync_once(request, step.spec, step.structured, clock))
        except StopIteration as done:
            answer: Answer = done.value
            return answer


def _sync_once(request: Request, spec: str, structured: bool, clock: _Clock) -> _Result:
    runnable = _runnable(request, spec, structured, loop=0)
    if runnable is None:
        return _Result(None, "", None, False)
    release = hold(request.run, provider_of(spec), slot_limit(provider_of(spec), request.limit))
    held = _rate(request, spec, clock)
    if not isinstance(held, Held):
        release()
        return _result(request, spec, structured, held, time.perf_counter(), sent=False)
    started, left = time.perf_counter(), clock.left(spec)
    # The request runs in a helper thread so that the deadline can stop waiting for it; the slot is released
    # when the request is closed (answered, failed, or timed out by its client, which never re-sends it).
    pool = ThreadPoolExecutor(max_workers=1)
    context = contextvars.copy_context()
    prompt = messages(request.system, request.user, spec)
    listener = StreamedArguments()
    future = pool.submit(context.run, runnable.invoke, prompt, listened(_config(request), listener))
    future.add_done_callback(lambda done: _closed(done, spec, release))
    try:
        out: Any = future.result(timeout=left)
    except FutureTimeout:
        out = _timeout(request)
    except Exception as exc:
        out = _provider_failure(exc)
    finally:
        pool.shutdown(wait=False)
    # a request given up at its deadline may still be streaming in the helper thread: its pieces are not read
    streamed = None if isinstance(out, BaseException) else listener.raws()
    result = _result(request, spec, structured, out, started, streamed=streamed)
    return _settled(result, held, out)


def _asked(request: Request, spec: str) -> Asked:
    """Return the request as its rate limits see it: its run, its model, and the tokens it counts when sent (its
    prompt and all it may write, as OpenAI counts them at request time)."""
    if (
        request.limits is not None
    ):  # from the state: a resumed run, Studio's and invoke's are held as any
        declare(request.run, request.limits)
    return Asked(request.run, spec, provider_of(spec), lambda: _abandoned(request)["total_tokens"])


def _rate(request: Request, spec: str, clock: _Clock) -> Held | BaseException:
    """Wait until the model's rate limits let the request go, within its deadline; else the error it failed with."""
    left = clock.left(spec)
    if left <= 0:
        return _timeout(request)
    try:
        return _in_time(
            request,
            spec,
            clock,
            reserve(_asked(request, spec), left),
        )
    except RateLimited as exc:
        return exc


async def _arate(request: Request, spec: str, clock: _Clock) -> Held | BaseException:
    """Return the async twin of :func:`_rate`: the wait is cancellable."""
    left = clock.left(spec)
    if left <= 0:
        return _timeout(request)
    try:
        return _in_time(
            request,
            spec,
            clock,
            await areserve(_asked(request, spec), left),
        )
    except RateLimited as exc:
        return exc


def _in_time(request: Request, spec: str, clock: _Clock, held: Held) -> Held | BaseException:
    """Return what the request took, or its timeout when the wait used the whole deadline (it is given back)."""
    if clock.left(spec) > 0:
        return held
    settle(held, None, given_back=True)
    return _timeout(request)


def _closed(done: Future[Any], spec: str, release: Any) -> None:
    """Close a request sent from a thread: after a 429 its model is paused for every run, then its slot is free."""
    pause_after(spec, None if done.cancelled() else done.exception())
    release()


def _settled(result: _Result, held: Held, out: Any) -> _Result:
    """Settle what the request took from the rate limits to the usage it reported (nothing, when it billed none),
    and take in the limits its response's ``x-ratelimit-*`` headers state."""
    settle(held, result.attempt["usage"] if result.attempt else None, headers=headers_of(out))
    return result


async def aask(request: Request) -> Answer:
    """Return the async twin of :func:`ask`: cancellable while a request is in flight or waits to be retried."""
    clock = _Clock(request.timeout_s)
    policy = _policy(request, clock)
    step: Step | Answer = next(policy)
    while isinstance(step, Step):
        if step.wait_s > 0:
            await asyncio.sleep(step.wait_s)
        result = await _async_once(request, step.spec, step.structured, clock)
        if store_blocks() and rate_limited(
            result.failure
        ):  # the policy pauses the model in the shared store
            step = await asyncio.to_thread(resumed, policy, result)
        else:
            step = resumed(policy, result)
    return step


async def _async_once(request: Request, spec: str, structured: bool, clock: _Clock) -> _Result:
    # The slot is taken before anything else awaits, so that the calls of a phase queue in their planned order.
    async with aslot(request.run, provider_of(spec), slot_limit(provider_of(spec), request.limit)):
        # Building a model may start the embedded server or load TLS certificates: blocking, so in a thread.
        runnable = await asyncio.to_thread(_runnable, request, spec, structured, loop_token())
        if runnable is None:
            return _Result(None, "", None, False)
        held = await _arate(request, spec, clock)
        if not isinstance(held, Held):
            return _result(request, spec, structured, held, time.perf_counter(), sent=False)
        started, left = time.perf_counter(), clock.left(spec)
        listener = StreamedArguments()
        try:
            prompt = messages(request.system, request.user, spec)
            config = listened(_config(request), listener)
            out: Any = await asyncio.wait_for(runnable.ainvoke(prompt, config), left)
        except TimeoutError:
            out = _timeout(request)
        except Exception as exc:
            out = _provider_failure(exc)
        failure = out if isinstance(out, BaseException) else None
        result = _result(request, spec, structured, out, started, streamed=listener.raws())
        if (
            store_blocks()
        ):  # a database every worker shares: its round trips leave the event loop free
            await asyncio.to_thread(pause_after, spec, failure)  # before the slot is free
            return await asyncio.to_thread(_settled, result, held, out)
        pause_after(spec, failure)  # before the slot is free
        return _settled(result, held, out)
