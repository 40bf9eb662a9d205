"""A comparison's spend caps, held request by request: every model request of every run passes one gate.

A run is not held to its worst case before it starts (a vote of 15 reserved 22,290 tokens at once for 15
requests that spend 3,195 together). Each request is reserved as a debate's own cap reserves it (its prompt
counted with the margin for the provider's tokenizer, its whole output allowance, at the dearest price the
prompt can bill at, ``calls.spend``) against what the caps have left after the requests in flight. When it
does not fit, it waits for those to settle; when none is in flight, it is refused and its run is cut: left
out, never scored. Requests are let through in the order they ask, so none waits forever.

The gate sees each request as a LangChain callback on the run's config: the engine's calls need no hook,
and the run itself carries no cap of the comparison's (a run's own cap, the config file's, still holds).
A model may run async on the comparison's loop or sync in a thread of its own (the fake model's structured
answers do); either way a wait counts against the request's deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from debate_engine.calls.spend import FREE, bill, dearest, worst_case
from debate_engine.calls.usage import usage_of
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import AgentProfile, RunSettings
from debate_engine.errors import DebateError
from debate_engine.memory.tokens import count_tokens

PRICED = 10.0**9
"""The cost cap the gate resolves a run's settings with, only so that every model's price is required (the
largest a context takes): the comparison's caps are not a run's own."""
VOTER = re.compile(r"^(?P<agent>.+)-\d+$")
"""A vote's voter: a copy of the first configured agent, with its own number."""


@dataclass(frozen=True)
class Need:
    """The most one request may spend: tokens (prompt and completion) and US dollars."""

    tokens: int
    cost: float


@dataclass(frozen=True)
class Refusal:
    """A request the caps could not hold with nothing else in flight: what it needed, against what was spent."""

    flag: str
    """The cap it did not fit: ``--max-tokens`` or ``--max-cost``."""
    need: Need
    spent: dict[str, float]
    limits: dict[str, float]


class Refused(DebateError):
    """A request of a run the comparison's caps cannot hold: the run is cut, left out, never scored.

    The comparison catches it; were it to reach the command line, it says what to change.
    """

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(
            f"{refusal.flag}: a request needed more than the comparison has left; rerun with a "
            f"larger {refusal.flag}"
        )
        self.refusal = refusal


FLAGS = {"tokens": "--max-tokens", "cost": "--max-cost"}
"""Each cap by what it limits, named by its flag."""


class SpendGate:
    """What the comparison's caps have left, and the requests in flight against them.

    ``spent`` is the comparison's own record (``Comparison.spent``): settled requests are added to it as
    they end, and a run's recorded spend replaces them when the run ends.
    """

    def __init__(self, limits: dict[str, float], spent: dict[str, float]) -> None:
        self.limits, self.spent = limits, spent
        """``limits`` by what they limit: ``tokens``, ``cost``."""
        self.reserved = {"tokens": 0.0, "cost": 0.0}
        self.in_flight = 0
        self.refused: Refusal | None = None
        """The last request refused: what the stop line reports."""
        self._waiting: deque[object] = deque()
        self._changed = asyncio.Condition()

    def left(self) -> dict[str, float]:
        """Return what each cap has left once the requests in flight spend their worst case."""
        return {k: limit - self.spent[k] - self.reserved[k] for k, limit in self.limits.items()}

    async def admit(self, need: Need, cut: Callable[[], bool]) -> None:
        """Wait until ``need`` fits, then reserve it; raise :class:`Refused` when it cannot (or ``cut()``)."""
        ticket = object()
        async with self._changed:
            self._waiting.append(ticket)
            try:
                while not self._admitted(ticket, need, cut):
                    await self._changed.wait()
            finally:
                self._waiting.remove(ticket)
                self._changed.notify_all()

    def _admitted(self, ticket: object, need: Need, cut: Callable[[], bool]) -> bool:
        if cut() and self.refused is not None:
            raise Refused(self.refused)
        if self._waiting[0] is not ticket:
            return False  # in the order they asked
        short = self._short(need)
        if short is None:
            self.reserved["tokens"] += need.tokens
            self.reserved["cost"] += need.cost
            self.in_flight += 1
            return True
        if self.in_flight:
            return False  # what is in flight may spend less than it reserved
        self.refused = Refusal(FLAGS[short], need, dict(self.spent), dict(self.limits))
        raise Refused(self.refused)

    def _short(self, need: Need) -> str | None:
        """Return which cap ``need`` does not fit (None: both hold it)."""
        wanted = {"tokens": need.tokens, "cost": need.cost}
        left = self.left()
        return next((k for k in left if wanted[k] > left[k] + 1e-12), None)

    async def settle(self, need: Need, used: Need) -> None:
        """Release an ended request's reservation and count what it used."""
        async with self._changed:
            self.reserved["tokens"] -= need.tokens
            self.reserved["cost"] -= need.cost
            self.in_flight -= 1
            self.spent["tokens"] += used.tokens
            self.spent["cost"] += used.cost
            self._changed.notify_all()


class RunGate(BaseCallbackHandler):
    """One run's requests at the comparison's gate, each priced as its agent's (or the judge's) call.

    LangChain calls a handler in the event loop's thread when a model runs async, and in the model's own thread
    when it runs sync (the fake model's structured answers do): it awaits a coroutine only in the first case,
    and logs and swallows a coroutine's error in the second. So each event is given in the form its caller can
    wait on, and the gate's own state is only ever touched on the comparison's loop.
    """

    raise_error = True
    """A refusal must stop the request, not be logged and let through."""

    def __init__(self, gate: SpendGate, settings: RunSettings) -> None:
        self.loop = asyncio.get_running_loop()
        self.gate, self.prices = gate, settings["prices"]
        self.profiles = {p["id"]: p for p in (*settings["agents"], settings["judge"])}
        self.requests: dict[UUID, tuple[Need, Sequence[str]]] = {}
        self.cut = False
        """A request of this run was refused: its others are refused too, nothing more is spent on it."""

    @property
    def on_chat_model_start(self) -> Callable[..., Any]:
        return self._on_loop(self._start)

    @property
    def on_llm_end(self) -> Callable[..., Any]:
        return self._on_loop(self._end)

    @property
    def on_llm_error(self) -> Callable[..., Any]:
        return self._on_loop(self._error)

    def _on_loop(self, event: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., Any]:
        """Return ``event`` to await on the comparison's loop, or to block on from another thread."""
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self.loop:
            return event

        def blocking(*args: Any, **kwargs: Any) -> None:
            asyncio.run_coroutine_threadsafe(event(*args, **kwargs), self.loop).result()

        return blocking

    async def _start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        profile = self._profile((metadata or {}).get("agent_id"))
        models = profiled_models(profile) if profile else list(self.prices)
        need = self._need(messages, kwargs.get("invocation_params") or {}, profile, models)
        try:
            await self.gate.admit(need, lambda: self.cut)
        except Refused:
            self.cut = True
            raise
        self.requests[run_id] = (need, models)

    def _need(
        self,
        messages: list[list[BaseMessage]],
        params: dict[str, Any],
        profile: AgentProfile | None,
        models: Sequence[str],
    ) -> Need:
        """Return the most a request may spend, as the debate's own cap reserves a call's request: its prompt
        (tool definitions included) with the margin, its whole output allowance, at its dearest model."""
        prompt = sum(count_tokens(m.text) for batch in messages for m in batch)
        prompt += count_tokens(json.dumps(params["tools"])) if params.get("tools") else 0
        allowance = params.get("max_tokens") or params.get("max_completion_tokens")
        if not allowance:  # a model that does not say (the fake): its profile's, else the largest
            profiles = [profile] if profile else list(self.profiles.values())
            allowance = max(p["max_output_tokens"] for p in profiles)
        i, o = worst_case(prompt, int(allowance))
        return Need(i + o, dearest(self.prices, models, i, o) if models else 0.0)

    async def _end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        need, models = self.requests.pop(run_id, (None, ()))
        if need is None:
            return
        generation = (
            response.generations[0][0] if response.generations and response.generations[0] else None
        )
        usage = usage_of(getattr(generation, "message", None))
        if usage is None:  # nothing reported: count the worst case until the run's record says
            await self.gate.settle(need, need)
            return
        dollars = max((bill(self.prices.get(m, FREE), usage)[0] for m in models), default=0.0)
        await self.gate.settle(need, Need(usage["input_tokens"] + usage["output_tokens"], dollars))

    async def _error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        need, _ = self.requests.pop(run_id, (None, ()))
        if need is not None:  # it may have been billed: its worst case, until the run's record says
            await self.gate.settle(need, need)

    def _profile(self, agent_id: Any) -> AgentProfile | None:
        """Return the profile a request's agent id names: an agent, the judge, or a vote's numbered voter."""
        if agent_id in self.profiles:
            return self.profiles[agent_id]
        voter = VOTER.match(str(agent_id or ""))
        return self.profiles.get(voter["agent"]) if voter else None


def profiled_models(profile: AgentProfile) -> list[str]:
    """Return the models that may answer a profile's request: its own, then its fallbacks."""
    return [profile["model"], *profile.get("fallback_models", [])]


def gated_settings(context: Any, priced: bool) -> RunSettings:
    """Return a run's settings as the gate prices them: no cap of its own, every model's price required."""
    return resolve(
        dataclasses.replace(context, max_tokens=None, max_cost=PRICED if priced else None)
    )


class _QuietRefusals(logging.Filter):
    """LangChain logs an error a callback raises before raising it: a refusal is reported by the stop line."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(
            isinstance(arg, str) and arg.startswith(f"{Refused.__name__}(") for arg in args
        )


logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietRefusals())
