"""Stepping a generator whose return value matters, from any thread.

The road's policy and the limiter's take are generators: each step yields what to
wait for, and the generator's return is the result. A thread cannot hand back a
``StopIteration`` (it cannot be raised into a future), so a step is taken here and the
return value comes back as a value.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

Yielded = TypeVar("Yielded")
Sent = TypeVar("Sent")
Returned = TypeVar("Returned")


def resumed(steps: Generator[Yielded, Sent, Returned], sent: Sent) -> Yielded | Returned:
    """Return the generator's next yield after ``sent`` (None for ``next``), or its return value."""
    try:
        return steps.send(sent)
    except StopIteration as done:
        returned: Returned = done.value
        return returned
