"""Run a generator of prompts (a multi-call procedure such as a chunked summary) on the road.

The procedure's rules live where they belong (``memory.summarizer``) and never
call a model: they yield each prompt and receive its answer. A call whose every
model failed is thrown back into the procedure, which decides what it means.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Generic, TypeVar

from debate_engine.calls.road import Answer, CallFailed, Request, aask, ask

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class _Done(Generic[R]):
    """What the procedure returned once it has finished."""

    value: R


def _step(steps: Generator[P, Answer, R], answer: Answer | CallFailed | None) -> P | _Done[R]:
    """Advance the procedure: its next prompt, or :class:`_Done` with its result."""
    try:
        if answer is None:
            return next(steps)
        if isinstance(answer, CallFailed):
            return steps.throw(answer)
        return steps.send(answer)
    except StopIteration as done:
        result: R = done.value
        return _Done(result)


def drive(steps: Generator[P, Answer, R], request_of: Callable[[P], Request]) -> R:
    """Answer every prompt of ``steps`` with :func:`ask` and return what the procedure returns."""
    step = _step(steps, None)
    while not isinstance(step, _Done):
        try:
            answer: Answer | CallFailed = ask(request_of(step))
        except CallFailed as exc:
            answer = exc
        step = _step(steps, answer)
    return step.value


async def adrive(steps: Generator[P, Answer, R], request_of: Callable[[P], Request]) -> R:
    """Return the async twin of :func:`drive`."""
    step = _step(steps, None)
    while not isinstance(step, _Done):
        try:
            answer: Answer | CallFailed = await aask(request_of(step))
        except CallFailed as exc:
            answer = exc
        step = _step(steps, answer)
    return step.value
