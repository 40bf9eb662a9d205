"""Shared fixtures: no API keys, no network, a fresh graph per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from debate_engine.calls import limits
from debate_engine.memory import Turn, new_turn


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Blank every provider key, default to the fake model, keep the database in the test's folder."""
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "DEBATE_MODEL", "fake"
    )  # a test that forgets a model never starts the local one
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
    """Return a transcript turn for memory tests; ``i`` is its ``seq``."""
    text = (
        content
        if content is not None
        else f"Turn {i} about rate_limiter.py and token buckets. " * 5
    )
    turn = new_turn(
        i,
        kind=kind,
        round_no=round_no if round_no is not None else i // 4 + 1,  # type: ignore[arg-type]
        speaker=speaker,
        role=speaker,
        content=text,
        target=target,
        model="fake",
    )
    return turn


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run on a skipped integration test: CI must not turn green on a missing server.

    Set DEBATE_ALLOW_SKIPS=1 to allow it (e.g. on a machine without PostgreSQL).
    """
    import os

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [
        r
        for r in (reporter.stats.get("skipped", []) if reporter else [])
        if "integration" in r.keywords
    ]
    if skipped and not os.environ.get("DEBATE_ALLOW_SKIPS") and exitstatus == 0:
        names = ", ".join(sorted({r.nodeid for r in skipped}))
        if reporter:
            reporter.write_line(
                f"integration tests were skipped ({names}); set DEBATE_ALLOW_SKIPS=1 to allow"
            )
        session.exitstatus = 1


@pytest.fixture
def clean_limiter() -> Iterator[None]:
    """Start a test with no limit, level, pause or read limit in the process, and leave none (``autouse`` it)."""
    limits.forget()
    yield
    limits.forget()
