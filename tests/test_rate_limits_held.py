"""A run is held to the rate limits its settings state wherever it runs: ``invoke`` and Studio (which declare
nothing), and a resume in a fresh process, take them from the checkpointed state with each request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from debate_engine import Context, compile_debate
from debate_engine.calls import limits


@pytest.fixture
def fresh_limiter(monkeypatch: pytest.MonkeyPatch) -> Iterator[limits.Limiter]:
    """Give the test a limiter that knows no run yet, as in a process that has just started."""
    limiter = limits.Limiter()
    monkeypatch.setattr(limits, "LIMITER", limiter)
    yield limiter


def test_an_invoked_debate_is_held_to_its_limits(fresh_limiter: limits.Limiter) -> None:
    compile_debate().invoke(
        {"problem": "Design a cache"},
        {"configurable": {"thread_id": "i"}},
        context=Context(model="fake", rounds=1, agents="kiss", rpm=6000, tpm=900_000),
    )
    kept = fresh_limiter.kept("i", "fake")
    assert {unit: (k.value, k.source) for unit, k in kept.items()} == {
        "requests": (6000, "configured"),
        "tokens": (900_000, "configured"),
    }


def test_a_resume_in_a_fresh_process_is_held_to_the_limits_in_its_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "r"}}
    stopped = compile_debate(checkpointer=saver, interrupt_before=["critique"])
    stopped.invoke(
        {"problem": "Design a cache"},
        config,
        context=Context(model="fake", rounds=1, agents="kiss,security", rpm=6000),
    )
    fresh = limits.Limiter()  # the process that resumes has declared nothing
    monkeypatch.setattr(limits, "LIMITER", fresh)
    assert all(k.value is None for k in fresh.kept("r", "fake").values())
    values = compile_debate(checkpointer=saver).invoke(None, config)
    assert values["solution"]
    assert fresh.kept("r", "fake")["requests"].value == 6000
