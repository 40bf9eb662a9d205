"""A deterministic offline chat model for tests, dry runs and benchmarks.

Its replies are made from the prompt's own words, so the same prompt always
gets the same reply, and identifiers in the prompt (``rate_limiter.py``,
``429``) show up in it the way a real model would repeat them. It sleeps
``latency_ms`` per call, which is how the benchmarks see concurrency.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import time
import typing
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel

from debate_engine.memory.tokens import count_tokens

VOCABULARY = [
    "cache",
    "queue",
    "shard",
    "replica",
    "token",
    "bucket",
    "window",
    "quota",
    "latency",
    "throughput",
    "retry",
    "backoff",
    "idempotent",
    "schema",
    "index",
    "partition",
    "lease",
    "lock",
    "timeout",
    "budget",
    "metric",
    "alert",
    "rollout",
    "canary",
    "fallback",
    "circuit",
    "breaker",
    "gateway",
    "service",
    "store",
    "log",
    "audit",
    "policy",
    "key",
    "rotation",
    "limit",
    "burst",
]
IDENTIFIER = re.compile(r"\b(?:[A-Za-z_][\w-]*\.(?:py|ts|go|json|md|yaml|sql)|[A-Za-z]+_[\w]+|\d{2,}(?:\.\d+)*)\b")


class FakeChatModel(BaseChatModel):
    """Reply with ``words`` deterministic words after ``latency_ms`` milliseconds."""

    words: int = 60
    latency_ms: int = 0
    structured: bool = True
    """False makes ``with_structured_output`` unsupported, like some small models."""
    fail: str | None = None
    """``transport`` or ``invalid``: fail every call that way; ``summaries``: fail only the summarizer's calls."""
    summary_latency_ms: int = 0
    """Latency of the summarizer's calls instead of ``latency_ms`` (to stop a run inside a summary)."""
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "fake-debate"

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls += 1
        if self.fail == "transport":
            raise ConnectionError("fake transport failure")
        prompt = "\n".join(str(m.content) for m in messages)
        text = _words(prompt, self.words)
        n_in, n_out = count_tokens(prompt), count_tokens(text)
        return AIMessage(
            content=text,
            usage_metadata={"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out},
            response_metadata={"model_name": "fake"},
        )

    def _latency(self, run_manager: Any) -> float:
        slow = self.summary_latency_ms if self.summary_latency_ms and _summarizing(run_manager) else self.latency_ms
        return slow / 1000

    def _fail_summaries(self, run_manager: Any) -> None:
        if self.fail == "summaries" and _summarizing(run_manager):
            self.calls += 1
            raise ConnectionError("fake summarizer failure")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_ms or self.summary_latency_ms:
            time.sleep(self._latency(run_manager))
        self._fail_summaries(run_manager)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_ms or self.summary_latency_ms:
            await asyncio.sleep(self._latency(run_manager))
        self._fail_summaries(run_manager)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        if not self.structured:
            raise NotImplementedError("fake model configured without structured output")

        def fill(messages: Any) -> Any:
            raw = self.invoke(messages)
            if self.fail == "invalid":
                parsed, error = None, ValueError("fake invalid output")
            else:
                prompt = "\n".join(str(m.content) for m in messages)
                parsed, error = _instance(schema, prompt, str(raw.content)), None
            if include_raw:
                return {"raw": raw, "parsed": parsed, "parsing_error": error}
            if error:
                raise error
            return parsed

        return RunnableLambda(fill)


def _summarizing(run_manager: Any) -> bool:
    return run_manager is not None and "summarizer" in (run_manager.tags or [])


def _seed(text: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def _words(prompt: str, n: int) -> str:
    rng = _seed(prompt)
    ids = IDENTIFIER.findall(prompt)[:5]
    pool = VOCABULARY + ids
    sentences, words = [], 0
    while words < n:
        length = min(rng.randint(6, 14), n - words)
        sentence = " ".join(rng.choice(pool) for _ in range(length))
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
        words += length
    return " ".join(sentences)


def _instance(schema: type[BaseModel], prompt: str, text: str) -> BaseModel:
    """Fill any Pydantic model from ``text``: strings, lists of strings, numbers."""
    sentences = [s.strip() for s in text.split(".") if s.strip()]
    ids = list(dict.fromkeys(IDENTIFIER.findall(prompt)))
    values: dict[str, Any] = {}
    for i, (name, field) in enumerate(schema.model_fields.items()):
        annotation = field.annotation
        origin = typing.get_origin(annotation)
        if annotation is str:
            values[name] = text
        elif origin is list:
            values[name] = ids[:8] if "entit" in name else sentences[i % 3 :: 3][:3]
        elif annotation in (int, float):
            bounds = {type(m).__name__: m for m in field.metadata}
            low = getattr(bounds.get("Ge"), "ge", 0)
            high = getattr(bounds.get("Le"), "le", 100)
            values[name] = annotation(low + (high - low) * 7 // 10)
        elif annotation is bool:
            values[name] = True
    return schema.model_validate(values)
