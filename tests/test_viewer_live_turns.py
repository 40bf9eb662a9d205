"""A turn shows on the live page as soon as its call's reply lands, not when the slowest agent of its phase answers.

One agent answers at once and one is slow (a minute: the test never waits for it, it stops the run): the fast
agent's proposal must be on the page, and the slow agent named as at work, while the slow call is still out.
That holds for a run of this server and for one another process makes (``debate run`` at a terminal).
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from debate_engine.app.viewer import create_app
from debate_engine.app.viewer.in_flight import participants, working
from debate_engine.config.settled import settle
from tests.support.debate_cli import background
from tests.support.teams import run_team, team_file
from tests.test_viewer_actions import text_of, token_of

SLOW_MS = 60_000
"""The slow agent's every call: far longer than the test runs, which stops the debate instead."""


@pytest.fixture
def team(tmp_path: Path) -> Path:
    """Write a config file that seats a fast agent and a slow one."""
    # plain text: the slow call awaits (a stop cancels it at once) instead of sleeping in a thread
    return team_file(tmp_path, f"fake:latency_ms={SLOW_MS},structured=false")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(tmp_path / "debates.sqlite"))) as client:
        yield client


def until(client: TestClient, url: str, wanted: str, seconds: float = 60) -> str:
    """Return the page at ``url`` once it shows ``wanted``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page = client.get(url)
        if page.status_code == 200 and wanted in text_of(page.text):
            return page.text
        time.sleep(0.05)
    raise AssertionError(f"{url} never showed {wanted!r}: {text_of(client.get(url).text)[:800]}")


def landed_proposals(page: str) -> dict[str, str]:
    """Return the landed proposals a live part shows, by speaker: their full text."""
    found = re.findall(
        r'<span class="label">proposal by (\w+), landed after [^<]*</span>.*?<div class="text">([^<]*)</div>',
        page,
        re.S,
    )
    return dict(found)


def test_a_fast_agents_proposal_shows_while_the_slow_one_still_works(
    client: TestClient, team: Path
) -> None:
    runs = run_team(client, team)
    live = until(client, "/debates/t/live", "proposal by quick, landed")  # not its draft: landed
    shown = text_of(live)
    assert "Working now: propose, round 1" in shown and "At work: slow" in shown
    assert set(landed_proposals(live)) == {"quick"}  # the slow agent's call is still out
    assert runs.running("t")
    assert "the step has run" in shown
    whole = client.get("/debates/t").text
    assert landed_proposals(whole) == landed_proposals(live)
    assert "No round has begun yet" in text_of(whole)  # not in the transcript yet: only landed
    stopped = client.post("/debates/t/stop", data={"csrf": token_of(client)})
    kept = text_of(stopped.text)
    assert "Answered before the run stopped: propose, round 1" in kept and "At work" not in kept
    assert set(landed_proposals(stopped.text)) == {"quick"}


@pytest.mark.integration
def test_a_turn_another_process_writes_shows_as_it_lands(tmp_path: Path, team: Path) -> None:
    db = tmp_path / "debates.sqlite"
    args = ("run", "--config", str(team), "--thread-id", "cli", "--db", str(db), "Pick a queue")
    with (
        background(*args, log=tmp_path / "run.log") as process,
        TestClient(create_app(str(db))) as client,
    ):
        live = until(client, "/debates/cli/live", "proposal by quick")
        shown = text_of(live)
        assert "At work: slow" in shown and set(landed_proposals(live)) == {"quick"}
        assert process.poll() is None  # the slow call is still out
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 143
        kept = until(client, "/debates/cli", "Answered before the run stopped")
        assert set(landed_proposals(kept)) == {"quick"}


def test_who_is_at_work_counts_each_agents_calls_in_its_step() -> None:
    seats = [{"id": name, "role": "kiss"} for name in ("a", "b", "c")]
    values: dict[str, Any] = {"settings": {"agents": seats}, "transcript": [], "phase": "propose"}
    planned = participants(values, "critique")
    assert planned == {"a": 2, "b": 2, "c": 2}
    landed = [{"speaker": "a"}, {"speaker": "a"}, {"speaker": "b"}]
    assert working(planned, landed, "critique") == ["b (1 of 2 critiques)", "c (0 of 2 critiques)"]
    assert working(participants(values, "refine"), landed, "refinement") == ["c"]
    assert participants(values, "synthesize") == {"the judge": 1}


def test_a_debate_taken_in_but_not_set_up_yet_shows_its_page_while_another_process_runs_it(
    tmp_path: Path,
) -> None:
    """The first checkpoint holds only the settings (``begin``): no step has begun, nothing is shown at work."""
    import asyncio
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from starlette.testclient import TestClient

    from debate_engine import Context, compile_debate
    from debate_engine.app.store.database import athread_lock
    from debate_engine.app.viewer import create_app
    from debate_engine.nodes.setup import INTAKE

    db = tmp_path / "d.sqlite"
    with sqlite3.connect(db, check_same_thread=False) as conn:
        settled = settle(Context(model="fake", rounds=1, agents="kiss,security"))
        compile_debate(checkpointer=SqliteSaver(conn)).update_state(
            {"configurable": {"thread_id": "x"}}, settled.intake("Pick a cache"), as_node=INTAKE
        )

    async def held() -> tuple[int, str]:
        async with athread_lock(str(db), "x"):
            with TestClient(create_app(str(db))) as client:
                page = client.get("/debates/x")
                return page.status_code, page.text

    status, text = asyncio.run(held())
    assert status == 200 and "this page failed" not in text and "Pick a cache" in text
