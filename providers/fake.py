"""A deterministic offline chat model for tests, dry runs and benchmarks.

Its replies are made from the prompt's own words, so the same prompt always
gets the same reply, and identifiers in the prompt (``rate_limiter.py``,
``429``) show up in it the way a real model would repeat them. It sleeps ``latency_ms`` per call, which is how
the benchmarks see concurrency; to a streaming listener it writes the second half of that time (``fake_stream``).

Given ``solve`` (and ``conform``), it is a population whose truth is known: on a problem holding an integer
expression (``12+34*56``) it answers right with probability ``solve`` and otherwise the one fixed wrong answer
(right + 1), so a plurality is a majority and the binomial formula applies; shown other agents' answers, it takes
their majority's with probability ``conform``. Given ``defer=AGENT:P``, shown the answer of the agent ``AGENT`` by
name, it takes that answer with probability ``P`` (before any conformity): identity bias, which an anonymous debate
(the others as ``Author A``) gives it no name to act on. Each draw is seeded by the run's thread, the agent and the
question, so a resumed run draws the same and every voter draws on its own.

Tasks may differ in difficulty: ``solve=A-B`` draws each question's solve
probability uniformly from A to B, ``solve=A/B/...`` picks it among the values
given, each as likely; the draw is seeded by the question alone, so every
voter and every protocol meets the same question at the same difficulty, and
k voters agree with probability ``p^k + (1-p)^k`` on it.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import time
import typing
from collections import Counter
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel

from debate_engine.memory.budget import PROBLEM_HEADER
from debate_engine.memory.perspective import AUTHOR, YOU
from debate_engine.memory.tokens import count_tokens
from debate_engine.providers.fake_stream import astream, stream, streaming

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
EXPRESSION = re.compile(r"(?<![\w.])\d+(?:\s*[-+*]\s*\d+)+(?![\w.])")
"""An integer expression of ``+``, ``-`` and ``*`` in a problem: what the population solves."""
STATED = re.compile(r"My answer is (-?\d+)\.")
HEADING = re.compile(r"^#{2,3} (.*)$", re.MULTILINE)
TASK_HEADING = "## Your task"
IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z_][\w-]*\.(?:py|ts|go|json|md|yaml|sql)|[A-Za-z]+_[\w]+|\d{2,}(?:\.\d+)*)\b"
)


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
    solve: float | None = None
    """Probability of the right answer on an arithmetic problem; None: reply from the prompt's words."""
    difficulty: tuple[float, ...] = ()
    """Per question, the solve probability is drawn (seeded by the question) from these: two values are a range
    (``solve=A-B``, uniform), more or a ``mixture`` are the values themselves; empty: ``solve`` for every one."""
    mixture: bool = False
    """``difficulty`` lists the values to pick among (``solve=A/B/...``), not a range's ends."""
    conform: float = 0.0
    """Probability of taking the other agents' majority answer when a position turn shows one."""
    defer: tuple[str, float] | None = None
    """``(agent, probability)``: take that agent's answer with this probability when a position turn shows it
    under the agent's name."""
    grammar: bool = True
    """Keep a structured answer within its schema's ``maxLength`` and ``maxItems``, as a grammar-constrained model
    does; False writes past them, as a large model on a server without a grammar may."""

    @property
    def _llm_type(self) -> str:
        return "fake-debate"

    def _reply(
        self, messages: list[BaseMessage], run_manager: Any = None, answering: bool = False
    ) -> AIMessage:
        self.calls += 1
        if self.fail == "transport":
            raise ConnectionError("fake transport failure")
        prompt = "\n".join(str(m.content) for m in messages)
        text = _words(prompt, self.words)
        expression = EXPRESSION.search(_task_of(prompt)) if self.solve is not None else None
        if expression:
            run, me = _identity(messages, run_manager)
            seed = f"{run}|{me}|{' '.join(expression[0].split())}"
            text = (
                f"My answer is {self._answer(prompt, seed, me, expression[0], answering)}. {text}"
            )
        n_in, n_out = count_tokens(prompt), count_tokens(text)
        return AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": n_in,
                "output_tokens": n_out,
                "total_tokens": n_in + n_out,
            },
            response_metadata={"model_name": "fake"},
        )

    def _latency(self, run_manager: Any) -> float:
        slow = (
            self.summary_latency_ms
            if self.summary_latency_ms and _summarizing(run_manager)
            else self.latency_ms
        )
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
        told = streaming(run_manager)  # half the latency thinking, half writing
        if self.latency_ms or self.summary_latency_ms:
            time.sleep(self._latency(run_manager) / (2 if told else 1))
        self._fail_summaries(run_manager)
        reply = self._reply(messages, run_manager, bool(kwargs.get("answering")))
        if told:
            reply = stream(run_manager, reply, self._latency(run_manager) / 2)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        told = streaming(run_manager)
        if self.latency_ms or self.summary_latency_ms:
            await asyncio.sleep(self._latency(run_manager) / (2 if told else 1))
        self._fail_summaries(run_manager)
        reply = self._reply(messages, run_manager, bool(kwargs.get("answering")))
        if told:
            reply = await astream(run_manager, reply, self._latency(run_manager) / 2)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _answer(self, prompt: str, seed: str, me: str, expression: str, answering: bool) -> int:
        """Return the population's answer: its own draw, its last stated one, or (on a position turn) the named
        author's it defers to, else the crowd's."""
        right = evaluate(expression)
        own, by_speaker = answers_by_speaker(prompt, me)
        if own is None:
            p = self.solve_probability(expression)
            own = right if _seed(seed + "|solve").random() < p else right + 1
        author, chance = self.defer or ("", 0.0)
        deferred = by_speaker.get(author) if answering else None
        drawn = _seed(f"{seed}|defer|{prompt}").random()
        if deferred is not None and deferred != own and drawn < chance:
            return deferred  # the named author's answer, whatever the argument
        crowd = Counter(by_speaker.values()).most_common(2)
        held = (
            answering
            and crowd
            and (len(crowd) == 1 or crowd[0][1] > crowd[1][1])
            and crowd[0][0] != own
        )
        if held and _seed(f"{seed}|conform|{prompt}").random() < self.conform:
            return crowd[0][0]
        return own

    def solve_probability(self, expression: str) -> float:
        """Return the probability of the right answer on this question: its difficulty, drawn by the question."""
        if not self.difficulty:
            return float(self.solve or 0)
        rng = _seed("difficulty|" + "".join(expression.split()))
        if self.mixture:
            return rng.choice(self.difficulty)
        low, high = self.difficulty
        return low + (high - low) * rng.random()

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        if not self.structured:
            raise NotImplementedError("fake model configured without structured output")

        def fill(messages: Any) -> Any:
            raw = self.invoke(messages, answering="answer" in schema.model_fields)
            if self.fail == "invalid":
                parsed, error = None, ValueError("fake invalid output")
            else:
                prompt = "\n".join(str(m.content) for m in messages)
                parsed, error = _instance(schema, prompt, str(raw.content), self.grammar), None
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


def _within(field: Any, value: Any) -> Any:
    """``value`` within the field's ``enum`` / ``maxLength`` / ``maxItems``, as a grammar would hold the model."""
    extra = getattr(field, "json_schema_extra", None)
    extra = extra if isinstance(extra, dict) else {}
    choices = extra.get("enum")
    if isinstance(value, str) and choices and value not in choices:
        # a grammar lets the model write one of the choices only: one its text picks, the same for the same text
        return choices[_seed(value).randrange(len(choices))]
    if isinstance(value, str) and "maxLength" in extra:
        return _cut(value, int(extra["maxLength"]))
    if isinstance(value, list) and "maxItems" in extra:
        item = int((extra.get("items") or {}).get("maxLength", 10**9))
        return [_cut(str(v), item) for v in value[: int(extra["maxItems"])]]
    return value


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else (text[:limit].rsplit(" ", 1)[0] or text[:limit])


def _instance(schema: type[BaseModel], prompt: str, text: str, grammar: bool = True) -> BaseModel:
    """Fill any Pydantic model from ``text``: strings, lists of strings, numbers; within its bounds by default."""
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
    stated = STATED.match(text)
    if (
        stated and "answer" in values
    ):  # the population's position: the number it states, as the answer field
        values["answer"], values["position"] = stated[1], f"The answer is {stated[1]}."
    if grammar:
        values = {
            name: _within(schema.model_fields.get(name), value) for name, value in values.items()
        }
    return schema.model_validate(values)


def evaluate(expression: str) -> int:
    """Return the value of an integer expression of ``+``, ``-`` and ``*``: a sum of products, never ``eval``.

    Read by hand, not with ``ast``: the fake answers from many threads at once, and CPython 3.11's parser
    raised a SystemError under that load.
    """
    if not re.fullmatch(r"\s*\d+(?:\s*[-+*]\s*\d+)*\s*", expression):
        raise ValueError(f"not an integer expression of +, - and *: {expression!r}")
    total, sign, product = 0, 1, 1
    for token in re.findall(r"\d+|[-+*]", expression):
        if token.isdigit():
            product *= int(token)
        elif token == "*":
            continue
        else:  # + or -: the product so far is a finished term
            total, sign, product = total + sign * product, 1 if token == "+" else -1, 1
    return total + sign * product


def _task_of(prompt: str) -> str:
    """Return the part of a prompt that states the problem (its own section, else the task), else the whole prompt.

    Never the history: other agents' turns hold numbers that are not the question.
    """
    if PROBLEM_HEADER in prompt:
        problem = prompt[prompt.find(PROBLEM_HEADER) + len(PROBLEM_HEADER) :]
        return problem.split("\n## ", 1)[0]
    return prompt[prompt.rfind(TASK_HEADING) :] if TASK_HEADING in prompt else prompt


def _identity(messages: list[BaseMessage], run_manager: Any) -> tuple[str, str]:
    """Who draws: the thread and the agent the engine tags each call with (else the system prompt's hash).

    The thread makes each run of a comparison one sample; the agent keeps voters of one role apart.
    """
    meta = getattr(run_manager, "metadata", None) or {}
    agent = (
        meta.get("agent_id") or hashlib.sha256(str(messages[0].content).encode()).hexdigest()[:12]
    )
    return str(meta.get("thread_id", "")), str(agent)


def stated_answers(prompt: str, me: str) -> tuple[int | None, list[int]]:
    """Return the answer ``me`` last stated in the prompt (None: none), and each other speaker's last stated one."""
    own, others = answers_by_speaker(prompt, me)
    return own, list(others.values())


SPEAKER = re.compile(rf"\bby ({AUTHOR} [A-Z]+|\S+)|^({AUTHOR} [A-Z]+|\S+) \(turn")
"""Who wrote a turn, from its heading: ``Critique by kiss of architect``, ``Proposal by Author B``,
``Author B (turn 3)``."""


def answers_by_speaker(prompt: str, me: str) -> tuple[int | None, dict[str, int]]:
    """Return the answer ``me`` last stated in the prompt (None: none), and each other speaker's last one, by name.

    Turns are shown under headings such as ``### Critique by kiss of architect (round 1)``, or in an anonymous
    view ``### Critique by Author B of you (round 1)`` (``you``: the reader's own); the refine task quotes the
    agent's own proposal after ``Your current proposal``.
    """
    parts = HEADING.split(prompt)
    own: int | None = None
    others: dict[str, int] = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        answers = STATED.findall(body)
        if not answers:
            continue
        found = SPEAKER.search(heading)
        by = (found[1] or found[2]) if found else None
        if heading.startswith("Your task") and "Your current proposal" in body or by in (me, YOU):
            own = int(answers[-1])
        elif by:
            others[by] = int(answers[-1])
    return own, others
