"""Run a generator of prompts (a multi-call procedure such as a chunked summary) on the road.

The procedure's rules live where they belong (``memory.summarizer``) and never
call a model: they yield each prompt and receive its answer. A call whose every
model failed is thrown back into the procedure, which decides what it means.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar

from debate_engine.calls.road import Answer, CallFailed, Request, aask, ask

P = TypeVar("P")
R = TypeVar("R")


def _step(steps: Generator[P, Any, R], answer: Answer | CallFailed | None) -> tuple[bool, Any]:
    """Advance the procedure: ``(True, result)`` when it has finished, else ``(False, next prompt)``."""
    try:
        if answer is None:
            return False, next(steps)
        if isinstance(answer, CallFailed):
            return False, steps.throw(answer)
        return False, steps.send(answer)
    except StopIteration as done:
        return True, done.value


def drive(steps: Generator[P, Any, R], request_of: Callable[[P], Request]) -> R:
    """Answer every prompt of ``steps`` with :func:`ask` and return what the procedure returns."""
    finished, value = _step(steps, None)
    while not finished:
        try:
            answer: Answer | CallFailed = ask(request_of(value))
        except CallFailed as exc:
            answer = exc
        finished, value = _step(steps, answer)
    return value  # type: ignore[no-any-return]


async def adrive(steps: Generator[P, Any, R], request_of: Callable[[P], Request]) -> R:
    """Return the async twin of :func:`drive`."""
    finished, value = _step(steps, None)
    while not finished:
        try:
            answer: Answer | CallFailed = await aask(request_of(value))
        except CallFailed as exc:
            answer = exc
        finished, value = _step(steps, answer)
    return value  # type: ignore[no-any-return]
