"""Rate limits met together: 429s waited out by every run, waits told and recorded, ``compare --jobs 4`` kept whole.

Against the loopback server that holds its model to a requests and a tokens bucket per second and answers 429
with ``Retry-After`` past them (``tests/support/limited_server.py``). The limits stated once, the buckets and
the processes sharing one database are in ``tests/test_rate_limits.py`` and
``tests/integration/test_rate_limits_processes.py``; the worker fleet on PostgreSQL in
``tests/integration/test_rate_limits_postgres.py``.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from debate_engine.app.cli.progress import Progress
from debate_engine.app.store.shared_limits import open_store, waits_in
from debate_engine.calls import limits
from debate_engine.calls.limits import RateLimits
from debate_engine.calls.retry import RETRIES
from debate_engine.calls.road import CallFailed, Request, aask, ask
from tests.support.debate_cli import cli_env, in_process
from tests.support.limited_server import (
    MODEL,
    LimitedServer,
    charged,
    complete,
    debate_config,
    serving,
    stored_debates,
)

RATES = {"rpm": 4, "tpm": 3000}


@pytest.fixture(autouse=True)
def _clean(clean_limiter: None) -> None:
    """Each test starts with no limit, level or pause in the process, and leaves none."""


ASK = Request(
    models=(MODEL,),
    system="Be terse.",
    user="Name a queue.",
    temperature=0.0,
    max_tokens=32,
    timeout_s=20.0,
)


# --- a 429 is a turn not yet come: asked again as long as the deadline allows -----------------------------------


@pytest.mark.parametrize("sync", [True, False], ids=["ask", "aask"])
def test_a_429_is_asked_again_past_the_retries_a_failure_gets_and_bills_nothing(
    monkeypatch: pytest.MonkeyPatch, sync: bool
) -> None:
    """Six 429s in a row, then an answer: seven requests, where a failure other than a 429 stops at four."""
    with serving(monkeypatch) as server:
        server.retry_after = 0.05
        server.faults.extend(["429"] * 6)
        answer = ask(ASK) if sync else asyncio.run(aask(ASK))
    outcomes = [a["outcome"] for a in answer.attempts]
    assert outcomes == ["failed"] * 6 + ["ok"] and len(server.requests) == 7 > 1 + RETRIES
    assert all(a["usage"] is None for a in answer.attempts[:6]), (
        "a refused request billed something"
    )


def test_a_429_longer_than_the_deadline_stops_the_run_exit_3_and_the_resume_asks_only_what_was_left(
    tmp_path: Path,
) -> None:
    """The server asks for 3 s, the deadline allows 2: the run stops at once, resumable. The pause holds for every
    process on the database until it ends (a resume at once would stop the same way); after it, the resume finishes
    the debate asking each turn once."""
    with LimitedServer() as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-waits")
        server.retry_after, server.always = 3.0, "429"
        db, config = str(tmp_path / "d.sqlite"), str(debate_config(tmp_path, None))
        args = ["--config", config, "--no-summary", "--db", db, "--thread-id", "k", "--quiet"]
        stopped = in_process("run", "Design a rate limiter", *args, "--timeout", "2", env=env)
        assert stopped.returncode == 3, stopped.stderr
        assert "429" in stopped.stderr and "debate resume k" in stopped.stderr
        refused = len(server.requests)
        assert refused == 2, "a proposal was asked again within a deadline its wait did not fit"
        server.always = None
        time.sleep(3.0)  # the pause the server asked for, shared through the database, ends
        resumed = in_process("resume", "k", "--db", db, "--quiet", env=env)
        assert resumed.returncode == 0, resumed.stderr
    (values,) = stored_debates(tmp_path / "d.sqlite").values()
    assert complete(values) and len(server.admitted) == 7, "a turn was asked twice, or lost"
    assert charged(values) == (7, server.usage_total()), "the refused requests were charged"


# --- many debates in one process: compare --jobs 4 -----------------------------------------------------------------


def compare_four(server: LimitedServer, folder: Path, stated: dict[str, Any] | None) -> Any:
    """Run ``debate compare --jobs 4`` on four tasks, one debate each, against ``server``; return its runs."""
    env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-waits")
    config, db = str(debate_config(folder, stated)), folder / "c.sqlite"
    done = in_process(
        "compare",
        "builtin:arithmetic:4",
        "--protocols",
        "debate",
        "--jobs",
        "4",
        "--config",
        config,
        "--no-summary",
        "--db",
        str(db),
        "--output",
        str(folder / "o.json"),
        "--quiet",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    runs = json.loads((folder / "o.json").read_text())["runs"]
    assert len(runs) == 4
    return stored_debates(db)


def test_a_compare_of_four_debates_at_once_keeps_to_the_limits_it_states_and_loses_no_turn(
    tmp_path: Path,
) -> None:
    """Test (a): the four runs' requests take turns at one limiter; without the limits they walk into the
    server's (test (d) below)."""
    with LimitedServer(**RATES) as server:
        debates = compare_four(server, tmp_path, RATES)
    assert server.refused_total() == 0, server.refused
    assert len(debates) == 4 and all(complete(v) for v in debates.values())
    assert len(server.admitted) == 4 * 7, "a request was asked twice, or a turn is missing"


def test_with_no_limits_stated_every_429_is_waited_out_and_the_four_debates_finish_charged_for_none(
    tmp_path: Path,
) -> None:
    """Test (d): the same compare with no limits: the server refuses, each refused request is asked again only
    once its Retry-After has passed (the model paused for every run of the process), and every debate finishes
    whole, charged exactly what the server answered."""
    with LimitedServer(**RATES) as server:
        debates = compare_four(server, tmp_path, None)
    assert server.refused_total() > 0, "the server refused nothing: the test shows nothing"
    assert server.retried_early() == [], "a refused request was asked again before its Retry-After"
    assert len(debates) == 4 and all(complete(v) for v in debates.values())
    assert len(server.admitted) == 4 * 7
    requests, tokens = (sum(c) for c in zip(*map(charged, debates.values()), strict=True))
    assert (requests, tokens) == (len(server.admitted), server.usage_total())
    refused = [
        a
        for v in debates.values()
        for t in v["transcript"]
        for a in t.get("attempts") or []
        if "429" in (a["error"] or "")
    ]
    assert refused and all(a["usage"] is None for a in refused)


# --- a wait is told to the run and recorded where another process reads it --------------------------------------


class Two(TypedDict):
    answers: list[str]


async def two_requests_streamed(run: str, db: str) -> tuple[list[Any], dict[str, Any]]:
    """Ask twice from a graph's node on thread ``run``; return the custom events the run streamed, and the first
    wait another reader found recorded in ``db`` meanwhile."""

    async def node(state: Two) -> dict[str, Any]:
        first = await aask(replace(ASK, run=run))
        second = await aask(replace(ASK, run=run, user="Name a stack."))
        return {"answers": [first.text, second.text]}

    builder = StateGraph(Two)
    builder.add_node("ask", node)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph, config = builder.compile(), {"configurable": {"thread_id": run}}
    found: dict[str, Any] = {}

    async def read() -> None:
        while not found:
            found.update(await asyncio.to_thread(waits_in, db))
            await asyncio.sleep(0.05)

    reader = asyncio.create_task(read())
    events = [e async for e in graph.astream({"answers": []}, config, stream_mode="custom")]
    reader.cancel()
    return events, found


def test_a_request_waiting_for_its_limit_tells_the_run_the_model_and_the_seconds_and_records_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One request per 2 s: the second waits about 2 s, and says so; the store records the wait by run."""
    limits.declare(
        "r", RateLimits(models={MODEL: {"rpm": 1, "tpm": None}}, providers={}, period_s=2)
    )
    db = str(tmp_path / "d.sqlite")
    store = open_store(db)
    with serving(monkeypatch), limits.sharing(store):
        events, recorded = asyncio.run(two_requests_streamed("r", db))
    store.close()
    (wait,) = [e for e in events if e.get("event") == "rate_limit_wait"]
    assert wait["model"] == MODEL and 1.0 <= wait["seconds"] <= 2.0
    assert list(recorded) == ["r"] and recorded["r"][0] == MODEL


def test_the_progress_line_says_a_run_waits_for_a_rate_limit_until_when_and_a_long_wait_gets_a_line() -> (
    None
):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()
    progress = Progress(stream=shown)
    progress.show({"event": "rate_limit_wait", "model": MODEL, "seconds": 2.5})
    assert f"waiting for {MODEL}'s rate limit until" in shown.getvalue().rsplit("\r", 1)[-1]
    assert "for its rate limit" not in shown.getvalue(), "a short wait got a line of its own"
    progress.show({"event": "rate_limit_wait", "model": MODEL, "seconds": 30.0})
    assert f"{MODEL}: waiting 30.0 s for its rate limit\n" in shown.getvalue()
    told = io.StringIO()
    Progress(verbose=True, stream=told).show(
        {"event": "rate_limit_wait", "model": MODEL, "seconds": 1.5}
    )
    assert told.getvalue() == f"  {MODEL}: waiting 1.5 s for its rate limit\n"
    quiet = io.StringIO()
    Progress(quiet=True, stream=quiet).show(
        {"event": "rate_limit_wait", "model": MODEL, "seconds": 30.0}
    )
    assert quiet.getvalue() == ""


def test_a_call_failing_only_on_the_limiter_is_a_rate_limit_failure_nothing_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 429 pause past the deadline, met by another call: it fails at the limiter, having sent nothing."""
    limits.declare("r", limits.no_limits())
    with serving(monkeypatch) as server:
        limits.pause(MODEL, 60.0)
        with pytest.raises(CallFailed) as failed:
            asyncio.run(aask(replace(ASK, run="r", timeout_s=2.0)))
    assert server.requests == []
    (attempt,) = failed.value.attempts
    assert "RateLimited" in (attempt["error"] or "") and attempt["usage"] is None


def test_the_async_road_reaches_a_blocking_store_only_from_threads_through_429s(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A shared store (SQLite here, PostgreSQL for a worker) is reached by blocking round trips: the async
    road makes them from threads, the 429's pauses included, so the event loop serves the other calls."""
    store = open_store(str(tmp_path / "debates.sqlite"))
    on_loop: list[str] = []

    def watched(name: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop.append(name)
            except RuntimeError:
                pass
            return method(*args, **kwargs)

        return call

    for name in ("pause", "reserve", "adjust", "floor", "note_wait"):
        monkeypatch.setattr(store, name, watched(name, getattr(store, name)))
    with serving(monkeypatch) as server, limits.sharing(store):
        server.retry_after = 0.05
        server.faults.extend(["429"] * 3)
        answer = asyncio.run(aask(ASK))
    assert [a["outcome"] for a in answer.attempts] == ["failed"] * 3 + ["ok"]
    assert on_loop == []
