"""Rate limits: stated once (file, context, flag), taken by the road before every request, shared by every run.

Measured at a loopback OpenAI-compatible server that holds each model to a requests and a tokens bucket per
second (``tests/support/limited_server.py``) and counts what it refused. Processes sharing one database are in
``tests/integration/test_rate_limits_processes.py``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from debate_engine import Context, compile_debate
from debate_engine.app.store.shared_limits import SqliteBuckets
from debate_engine.calls import limits
from debate_engine.calls.buckets import HEADROOM_S, Bucket, InProcess, plan
from debate_engine.calls.limits import Asked, RateLimits, no_limits
from debate_engine.calls.road import CallFailed, Request, aask
from debate_engine.config.file import ConfigError
from debate_engine.config.resolve import resolve
from debate_engine.memory.records import Usage
from tests.support.debate_cli import cli_env, in_process
from tests.support.limited_server import (
    MODEL,
    LimitedServer,
    complete,
    debate_config,
    serving,
)


@pytest.fixture(autouse=True)
def _clean(clean_limiter: None) -> None:
    """Each test starts with no limit, level or pause in the process, and leaves none."""


@pytest.fixture
def open_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LimitedServer]:
    """Yield a server with no limit of its own: it records when each request arrived."""
    with serving(monkeypatch) as server:
        yield server


async def debates(path: Path, n: int, **context: Any) -> list[Any]:
    """Run ``n`` debates of the config at ``path`` at once in this process, each on its own thread."""
    settings = Context(config_file=str(path), summarize=False, **context)

    async def one(i: int) -> Any:
        cfg = {"configurable": {"thread_id": f"rate-{i}"}}
        return await compile_debate().ainvoke(
            {"problem": "Design a rate limiter"}, cfg, context=settings
        )

    return await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)


def spacing(server: LimitedServer) -> float:
    """Return the seconds from the first request the server let through to the last."""
    times = [t for t, _, _ in server.admitted]
    return times[-1] - times[0]


ASK = Request(
    models=(MODEL,),
    system="Be terse.",
    user="Name a queue.",
    temperature=0.0,
    max_tokens=32,
    timeout_s=10.0,
)


def limits_of(settings: Any) -> RateLimits:
    return settings["rate_limits"]


# --- the bucket ------------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    limit=st.integers(1, 50),
    takes=st.lists(
        st.tuples(st.floats(0, 2), st.floats(0.01, 1), st.floats(0, HEADROOM_S)),
        min_size=1,
        max_size=60,
    ),
)
def test_requests_sent_when_the_limiter_says_never_overfill_the_provider_s_bucket(
    limit: int, takes: list[tuple[float, float, float]]
) -> None:
    """The provider's bucket (strict, refilled as stated) admits every request sent after the wait taken, each
    reaching it up to the headroom late, in any order (a limit per 4 s: the room is three quarters of it)."""
    bucket, now, arrivals = Bucket("b", "tokens", float(limit), limit / 4), 0.0, []
    levels: dict[str, tuple[float, float]] = {}
    for gap, share, late in takes:
        now += gap
        send, after = plan(levels, [(bucket, share * bucket.room)], 0.0, now)
        levels.update(after)
        arrivals.append((send + late, share * bucket.room))
    level, at = 0.0, 0.0
    for when, amount in sorted(arrivals):
        level = max(0.0, level - bucket.per_s * (when - at)) + amount
        at = when
        assert level <= limit + 1e-6, "a request reached the provider past its limit"


def test_a_wait_lasts_the_refill_a_pause_is_waited_out_a_settlement_gives_back() -> None:
    store, bucket = InProcess(), Bucket("b", "requests", 10.0, 5.0)
    sends = [store.reserve([(bucket, 1.0)], "p", 60.0, 0.0) for _ in range(12)]
    room = int(bucket.room)  # 10 per 2 s, less a second of refill: 5 at once
    assert sends[:room] == [(0.0, True)] * room
    assert sends[-1] == (pytest.approx((12 - room) / 5), True)  # then one every fifth of a second
    assert store.reserve([], "p", 60.0, 0.0) == (0.0, True)
    store.pause("p", 5.0)
    assert store.reserve([], "p", 60.0, 1.0) == (5.0, True)
    assert store.reserve([(bucket, 1.0)], "p", 3.0, 1.0) == (5.0, False)  # too long: nothing taken
    store.adjust([(bucket, -12.0)], 0.0)
    assert store.levels["b"][0] == 0.0


def test_a_request_settles_its_tokens_to_its_usage_and_a_wait_given_up_gives_all_back() -> None:
    limits.declare(
        "r", RateLimits(models={MODEL: {"rpm": 1, "tpm": 1000}}, providers={}, period_s=60)
    )
    store = limits.LIMITER.store
    assert isinstance(store, InProcess)
    asked = Asked("r", MODEL, "openai", lambda: 400)

    def taken() -> dict[str, float]:
        return {name.split(":")[-2]: level for name, (level, _) in store.levels.items()}

    held = limits.reserve(asked, 10.0)  # an empty bucket: sent at once
    assert taken() == {"requests": pytest.approx(1, abs=0.01), "tokens": pytest.approx(400, abs=10)}
    limits.settle(held, Usage(input_tokens=150, output_tokens=50, total_tokens=200))
    assert taken()["tokens"] == pytest.approx(200, abs=10)
    # one request a minute: the next waits for the bucket to be empty (a request is more than its room)
    waiting = limits.LIMITER._steps(asked, 120.0)
    assert limits._advance(waiting) == pytest.approx(60, abs=1)
    waiting.close()  # never sent (a Ctrl-C while it waited): its request and tokens are given back
    again = limits.LIMITER._steps(asked, 120.0)
    assert limits._advance(again) == pytest.approx(60, abs=1), (
        "the cancelled request kept its place"
    )
    again.close()


def test_processes_sharing_a_database_draw_on_one_bucket_and_see_one_pause(tmp_path: Path) -> None:
    def opened() -> SqliteBuckets:
        return SqliteBuckets(str(tmp_path / "d.sqlite"), clock=lambda: 100.0)

    one, two, bucket = opened(), opened(), Bucket("m:requests", "requests", 4.0, 2.0)
    assert [one.reserve([(bucket, 1.0)], "p", 60.0, 100.0) for _ in range(2)] == [(100.0, True)] * 2
    assert two.reserve([(bucket, 1.0)], "p", 60.0, 100.0) == (100.5, True)  # after the other's two
    two.pause("p", 130.0)
    assert one.reserve([], "p", 60.0, 110.0) == (130.0, True)


def test_a_take_that_waited_for_another_processs_lock_past_its_deadline_is_not_taken(
    tmp_path: Path,
) -> None:
    """The wait for the database's write lock is part of the request's wait, counted from when it asked."""
    clock = [100.0]
    path = str(tmp_path / "d.sqlite")
    store, bucket = (
        SqliteBuckets(path, clock=lambda: clock[0]),
        Bucket("m:requests", "requests", 4.0, 2.0),
    )
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's take, holding the lock
    got: list[tuple[float, bool]] = []
    taking = threading.Thread(
        target=lambda: got.append(store.reserve([(bucket, 1.0)], "p", 0.5, 100.0))
    )
    taking.start()
    time.sleep(0.3)
    assert not got, "the take did not wait for the lock"
    clock[0] = 101.5  # the lock is let go past the request's half-second
    holder.execute("COMMIT")
    taking.join(timeout=30)
    assert got == [(101.5, False)]
    # the late one took nothing: the next is sent at once, allowed no wait at all
    assert store.reserve([(bucket, 1.0)], "p", 0.0, 101.5) == (101.5, True)
    holder.close()
    store.close()


# --- stated once: the file, the context, the flag ----------------------------------------------------------------


def test_limits_resolve_from_the_file_and_the_flags_win_over_it_kind_by_kind(
    tmp_path: Path,
) -> None:
    path = debate_config(tmp_path, {"rpm": 60, "tpm": 1000}, period_s=2)
    doc = json.loads(path.read_text())
    doc["rateLimits"]["providers"] = {"openai": {"tpm": 5000}}
    path.write_text(json.dumps(doc))
    fixed = limits_of(resolve(Context(config_file=str(path))))
    assert fixed == {
        "models": {MODEL: {"rpm": 60, "tpm": 1000}},
        "providers": {"openai": {"rpm": None, "tpm": 5000}},
        "period_s": 2,
    }
    flagged = limits_of(resolve(Context(config_file=str(path), rpm=5)))
    assert flagged["models"][MODEL] == {"rpm": 5, "tpm": 1000}
    assert limits_of(resolve(Context(model="fake"))) == no_limits()


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ({"models": {MODEL: {"rpm": -1}}}, "rateLimits.models"),
        ({"models": {MODEL: {"tpm": "lots"}}}, "tpm: 'lots' is not a number"),
        ({"models": {MODEL: {"rpn": 5}}}, "did you mean 'rpm'"),
        ({"models": {"openia:gpt": {"rpm": 5}}}, "rateLimits.models: model 'openia:gpt'"),
        ({"providers": {"opneai": {"rpm": 5}}}, "rateLimits.providers"),
        ({"periodSeconds": 0}, "rateLimits.periodSeconds"),
    ],
)
def test_a_bad_limit_in_the_file_is_named(
    tmp_path: Path, entry: dict[str, Any], named: str
) -> None:
    path = debate_config(tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), "rateLimits": entry}))
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        resolve(Context(config_file=str(path)))


def test_a_negative_or_non_numeric_limit_exits_2_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rpm: -1"):
        resolve(Context(model="fake", rpm=-1))
    with pytest.raises(ConfigError, match="tpm: '9' is not a number"):
        resolve(Context(**{"model": "fake", "tpm": "9"}))
    refused = in_process("run", "p", "--model", "fake", "--rpm", "-5")
    assert refused.returncode == 2 and "rpm: -5" in refused.stderr
    unread = in_process("run", "p", "--model", "fake", "--tpm", "many")
    assert unread.returncode == 2 and "--tpm" in unread.stderr


def test_each_source_of_a_limit_spaces_the_requests(
    open_server: LimitedServer, tmp_path: Path
) -> None:
    """Three requests a second (none at once: a second of refill is kept unspent): a one-round debate's seven
    requests take two seconds or more from the file, the context or the flag alike; with no limit, a fraction of
    one."""
    free = asyncio.run(debates(debate_config(tmp_path, {}), 1))
    assert complete(free[0]) and spacing(open_server) < 1.0
    sources: list[tuple[str, Any]] = [
        ("file", lambda: asyncio.run(debates(debate_config(tmp_path, {"rpm": 3}), 1))[0]),
        ("context", lambda: asyncio.run(debates(debate_config(tmp_path, {}), 1, rpm=3))[0]),
        ("flag", lambda: _flagged(tmp_path, open_server)),
    ]
    for source, run in sources:
        open_server.admitted.clear()
        values = run()
        assert complete(values), source
        assert spacing(open_server) >= (7 - 3) / 3, (
            f"the {source}'s limit did not hold the requests"
        )


def _flagged(tmp_path: Path, server: LimitedServer) -> Any:
    env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-limits")
    out = tmp_path / "flag.json"
    config = str(debate_config(tmp_path, {}))
    args = ["--config", config, "--rpm", "3", "--no-summary", "--db", str(tmp_path / "d.sqlite")]
    done = in_process(
        "run", "Design a rate limiter", *args, "--output", str(out), "--quiet", env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


# --- many debates, one budget --------------------------------------------------------------------------------


def test_four_debates_in_one_process_keep_to_the_limits_and_lose_no_turn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rates = {"rpm": 4, "tpm": 3000}
    # the control: with no limit stated, four debates walk into the server's limit together
    with serving(monkeypatch, **rates) as unlimited:
        asyncio.run(debates(debate_config(tmp_path, None), 4))
        assert unlimited.refused_total() > 0
    limits.forget()
    with serving(monkeypatch, **rates) as server:
        results = asyncio.run(debates(debate_config(tmp_path, rates), 4))
        assert server.refused_total() == 0, server.refused
        assert all(complete(v) for v in results), results
        attempts = [a for v in results for t in v["transcript"] for a in t.get("attempts") or []]
        assert all(a["outcome"] == "ok" for a in attempts)
        assert len(server.admitted) == 4 * 7


def test_a_429_pauses_every_run_drawing_on_the_model_until_its_retry_after(
    open_server: LimitedServer,
) -> None:
    open_server.retry_after = 1.0
    open_server.faults.append("429")

    async def both() -> None:
        first = asyncio.create_task(aask(replace(ASK, run="a")))
        while not open_server.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the 429 has come back: run b asks after it
        await asyncio.gather(first, aask(replace(ASK, run="b")))

    asyncio.run(both())
    refused, *later = open_server.requests
    assert refused["fault"] == "429" and len(later) == 2
    assert all(r["time"] - refused["time"] >= 0.95 for r in later), "a run walked into the pause"


def test_a_wait_past_the_deadline_fails_the_call_at_once_and_sends_nothing(
    open_server: LimitedServer, tmp_path: Path
) -> None:
    limits.declare(
        "r", RateLimits(models={MODEL: {"rpm": 1, "tpm": None}}, providers={}, period_s=60)
    )
    ask = replace(ASK, timeout_s=2.0, run="r")
    asyncio.run(aask(ask))
    started = time.monotonic()
    with pytest.raises(CallFailed) as failed:
        asyncio.run(aask(ask))
    assert time.monotonic() - started < 1.0, "the call waited for a limit it could not outwait"
    assert len(open_server.requests) == 1
    (attempt,) = failed.value.attempts
    assert attempt["usage"] is None and "RateLimited" in (attempt["error"] or "")
    env = cli_env(OPENAI_BASE_URL=open_server.base_url, OPENAI_API_KEY="sk-test-limits")
    config = str(debate_config(tmp_path, {"rpm": 1}, period_s=60))
    db = str(tmp_path / "d.sqlite")
    done = in_process(
        "run", "p", "--config", config, "--timeout", "2", "--db", db, "--thread-id", "k", env=env
    )
    assert done.returncode == 3 and "rate limit" in done.stderr and "debate resume k" in done.stderr


def test_a_resume_in_a_fresh_process_holds_the_run_to_the_limits_it_started_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limits are in the checkpointed settings: ``debate resume`` declares them again, flag-free."""
    from debate_engine.app.cli.main import main
    from debate_engine.app.store import shared_limits

    db = str(tmp_path / "d.sqlite")
    started = ["run", "--model", "fake:fail=transport", "--rpm", "600", "--db", db]
    assert main([*started, "--thread-id", "limited", "--rounds", "1", "Pick a cache."]) == 3
    declared: list[tuple[str, Any]] = []
    monkeypatch.setattr(shared_limits, "declare", lambda run, given: declared.append((run, given)))
    assert main(["resume", "limited", "--db", db]) == 3
    assert [run for run, _ in declared] == ["limited"]
    assert json.dumps(declared[0][1]).count("600") >= 1, declared
