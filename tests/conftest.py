"""Shared fixtures: no API keys, no network, a fresh graph per test."""

from __future__ import annotations

import time
from typing import Any

import pytest

from debate_engine.graph import Context, compile_debate
from debate_engine.memory import Turn, count_tokens


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Blank every provider key, default to the fake model, keep the database in the test's folder."""
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEBATE_MODEL", "fake")  # a test that forgets a model never starts the local one
    monkeypatch.setenv("DEBATE_DB", str(tmp_path / "debates.sqlite"))


@pytest.fixture
def debate():
    """Run a debate on a fresh in-memory graph and return its final values."""

    def run(problem: str = "Design a rate limiter", **context: Any) -> dict[str, Any]:
        context.setdefault("model", "fake")
        graph = compile_debate()
        config = {"configurable": {"thread_id": "t"}, "max_concurrency": 16}
        return graph.invoke({"problem": problem}, config, context=Context(**context))

    return run


def make_turn(
    i: int,
    *,
    speaker: str = "architect",
    kind: str = "proposal",
    content: str | None = None,
    target: str | None = None,
    round_no: int | None = None,
) -> Turn:
    """A transcript turn for memory tests."""
    text = content if content is not None else f"Turn {i} about rate_limiter.py and token buckets. " * 5
    return Turn(
        id=f"t{i}",
        round=round_no if round_no is not None else i // 4 + 1,
        kind=kind,
        speaker=speaker,  # type: ignore[typeddict-item]
        role=speaker,
        target=target,
        content=text,
        tokens=count_tokens(text),
        model="fake",
        usage=None,
        latency_ms=0,
        view=None,
        created_at=time.time(),
    )
