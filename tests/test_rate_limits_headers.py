"""The limits a provider states in its answers' ``x-ratelimit-*`` headers: read, the stricter kept, the run told.

The loopback server (``tests/support/limited_server.py``, ``states_limits``) answers as OpenAI does: its limit per
period, what is left of it, and the time until it is full again, on every answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from debate_engine.calls import limits
from debate_engine.calls.limits import Asked, RateLimits
from debate_engine.calls.ratelimit_headers import Kept, duration_s, stated
from debate_engine.calls.road import Request, aask
from tests.support.debate_cli import cli_env, in_process
from tests.support.limited_server import (
    MODEL,
    LimitedServer,
    complete,
    debate_config,
    serving,
)

OPENAI = {
    "x-ratelimit-limit-requests": "5000",
    "x-ratelimit-limit-tokens": "160000",
    "x-ratelimit-remaining-requests": "4999",
    "x-ratelimit-remaining-tokens": "159973",
    "x-ratelimit-reset-requests": "12ms",
    "x-ratelimit-reset-tokens": "6m0s",
    "x-request-id": "req_1234",
}
"""An answer's headers as OpenAI sends them."""


@pytest.fixture(autouse=True)
def _clean(clean_limiter: None) -> None:
    """Each test starts with no limit, level or pause in the process, and leaves none."""


def test_the_headers_are_read_as_openai_writes_them_and_anything_else_is_left_alone() -> None:
    said = stated(OPENAI)
    assert said is not None
    assert said.limit == {"requests": 5000, "tokens": 160000}
    assert said.remaining == {"requests": 4999, "tokens": 159973}
    assert said.reset_s == {"requests": 0.012, "tokens": 360.0}
    assert stated({"X-RateLimit-Limit-Requests": "60"}) is not None, "header names are case-blind"
    assert stated({"content-type": "application/json"}) is None
    assert stated({"x-ratelimit-limit-requests": "lots", "x-ratelimit-limit-tokens": "-5"}) is None
    assert [duration_s(v) for v in ("1h2m3.5s", "0.5s", "250ms", "7", "6m0sx", "", None)] == [
        3723.5,
        0.5,
        0.25,
        7.0,
        None,
        None,
        None,
    ]


def test_the_stricter_of_the_configured_and_the_read_limit_holds_and_the_run_is_told_whose(
    tmp_path: Path,
) -> None:
    """The server allows 3 requests a second and says so: a run configured for 100 keeps to 3, the provider's;
    one configured for 2 keeps to its own; each says which once."""
    with LimitedServer(rpm=3, states_limits=True) as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-headers")
        said = {}
        for configured in (100, 2):
            config = str(debate_config(tmp_path, {"rpm": configured}))
            done = in_process(
                "run",
                "Design a rate limiter",
                *("--config", config, "--no-summary", "--db", str(tmp_path / "d.sqlite")),
                env=env,
            )
            assert done.returncode == 0, done.stderr
            said[configured] = [line for line in done.stderr.splitlines() if "keeping to" in line]
    assert said[100] == [
        f"  {MODEL}: keeping to 3 requests per 1 s as the provider states (stricter than the "
        "configured 100)"
    ]
    assert said[2] == [
        f"  {MODEL}: keeping to the configured 2 requests per 1 s (the provider states 3)"
    ]


async def debates(path: Path, n: int) -> list[Any]:
    settings = Context(config_file=str(path), summarize=False)

    async def one(i: int) -> Any:
        cfg = {"configurable": {"thread_id": f"read-{i}"}}
        return await compile_debate().ainvoke(
            {"problem": "Design a rate limiter"}, cfg, context=settings
        )

    return await asyncio.gather(*(one(i) for i in range(n)))


@pytest.mark.parametrize("states_limits", [True, False], ids=["stated", "silent"])
def test_a_limit_read_from_the_provider_holds_debates_that_stated_a_looser_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, states_limits: bool
) -> None:
    """Configured for 100 requests a second against a server that allows 3: once one answer has said so, two
    debates at once keep to 3 and are refused nothing; from a server that says nothing they walk into its limit."""
    with serving(monkeypatch, rpm=3, states_limits=states_limits) as server:
        path = debate_config(tmp_path, {"rpm": 100})
        limits.declare(
            "warm", RateLimits(models={MODEL: {"rpm": 100, "tpm": None}}, providers={}, period_s=1)
        )
        asyncio.run(
            aask(Request((MODEL,), "Be terse.", "Name a queue.", 0.0, 32, 10.0, run="warm"))
        )
        assert limits.LIMITER.kept("warm", MODEL)["requests"] == (
            Kept(3, "read", 100, 3) if states_limits else Kept(100, "configured", 100, None)
        )
        results = asyncio.run(debates(path, 2))
        assert all(complete(v) for v in results)
        refused = server.refused_total()
    assert (refused == 0) is states_limits, server.refused


def test_what_the_provider_says_is_left_raises_the_bucket_others_on_the_account_spent_it() -> None:
    """Four requests per 2 s, none left (another client spent them): the next request waits for the refill, as
    the provider counts, where the limiter alone would send it at once."""
    limits.declare(
        "r", RateLimits(models={MODEL: {"rpm": 4, "tpm": None}}, providers={}, period_s=2)
    )
    asked = Asked("r", MODEL, "openai", lambda: 10)

    def first_wait() -> float | None:
        """Return how long the next request would wait (None: not at all); nothing is sent, all is given back."""
        steps = limits.LIMITER._steps(asked, 60.0)
        got = limits._advance(steps)
        if isinstance(got, float):
            steps.close()
            return got
        limits.settle(got, None, given_back=True)
        return None

    assert first_wait() is None
    left = {"x-ratelimit-limit-requests": "4", "x-ratelimit-remaining-requests": "4"}
    limits.LIMITER.read(asked, left)
    assert first_wait() is None, "a provider with all left raised nothing"
    limits.LIMITER.read(asked, {**left, "x-ratelimit-remaining-requests": "0"})
    # 4 held, room for 2 (a second of refill kept unspent): 3 over, at 2 a second
    assert first_wait() == pytest.approx(1.5, abs=0.05)
