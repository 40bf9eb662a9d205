"""A debate page offers only what can succeed: stop a run of this server, resume it, fork at a round that ended."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from starlette.testclient import TestClient

from debate_engine import Context, compile_debate
from debate_engine.app.store.database import athread_lock
from debate_engine.app.viewer import create_app
from tests.test_viewer_actions import text_of, token_of, wait_for

SITE = "http://127.0.0.1:8765"
ADDRESS = ("127.0.0.1", 8765)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "debates.sqlite"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(db), address=ADDRESS), base_url=SITE) as client:
        yield client


def start_slow(client: TestClient, thread: str) -> None:
    """Start a 3-round debate whose every call takes a while, and wait until it has turns."""
    form = {
        "csrf": token_of(client),
        "problem": "Pick a lock service",
        "model": "fake:latency_ms=300",
        "agents": "kiss,testing",
        "rounds": "3",
        "thread_id": thread,
    }
    assert client.post("/new", data=form, follow_redirects=False).status_code == 303
    wait_for(client, thread, "running", turns=2)


def stop_form(page: str) -> bool:
    return re.search(r'action="[^"]*/stop"', page) is not None


def test_a_running_debate_is_stopped_from_its_page_then_resumed_to_its_verdict(
    client: TestClient,
) -> None:
    start_slow(client, "slow")
    page = client.get("/debates/slow").text
    assert stop_form(page) and "Resume this debate" not in page
    sent = client.post(
        "/debates/slow/stop", data={"csrf": token_of(client)}, follow_redirects=False
    )
    assert sent.status_code == 303 and sent.headers["location"].endswith("/debates/slow")
    assert not client.app.state.runs.running("slow")  # type: ignore[attr-defined]
    stopped = client.get("/debates/slow")
    shown = text_of(stopped.text)
    assert "interrupted" in shown and "why: stopped from this page at" in shown, shown[:500]
    assert "Resume this debate" in stopped.text and not stop_form(stopped.text)
    turns = client.get("/debates/slow/state").json()["turns"]
    again = client.post("/debates/slow/stop", data={"csrf": token_of(client)})
    assert again.status_code == 409 and "is not running" in text_of(again.text)
    resumed = client.post(
        "/debates/slow/resume", data={"csrf": token_of(client)}, follow_redirects=False
    )
    assert resumed.status_code == 303
    done = wait_for(client, "slow", "done")
    assert done["turns"] > turns
    assert "Verdict" in text_of(client.get("/debates/slow").text)


def test_a_stop_needs_the_pages_token_and_its_own_origin(client: TestClient) -> None:
    start_slow(client, "guarded")
    token = token_of(client)
    for headers, data in (
        ({}, {"csrf": "forged"}),
        ({"Origin": "http://evil.example"}, {"csrf": token}),
        ({"Host": "evil.example:8765"}, {"csrf": token}),
        ({"Referer": "http://evil.example/page"}, {"csrf": token}),
    ):
        refused = client.post("/debates/guarded/stop", data=data, headers=headers)
        assert refused.status_code == 403, headers
        assert client.app.state.runs.running("guarded"), headers  # type: ignore[attr-defined]
    own = client.post(
        "/debates/guarded/stop",
        data={"csrf": token},
        headers={"Origin": SITE},
        follow_redirects=False,
    )
    assert own.status_code == 303


def test_a_debate_another_process_runs_is_not_offered_a_stop(client: TestClient, db: Path) -> None:
    stopped_after(db, "elsewhere", "propose")

    async def held() -> None:
        async with athread_lock(str(db), "elsewhere"):
            page = client.get("/debates/elsewhere").text
            assert "running" in text_of(page) and not stop_form(page)
            refused = client.post("/debates/elsewhere/stop", data={"csrf": token_of(client)})
            assert refused.status_code == 409
            assert "runs in another process" in text_of(refused.text)

    asyncio.run(held())


def stopped_after(db: Path, thread: str, node: str, times: int = 1, rounds: int = 2) -> None:
    """Store a debate stopped right after ``node`` ran for the ``times``-th time, as a crash would leave it."""
    with sqlite3.connect(db, check_same_thread=False) as conn:
        graph = compile_debate(checkpointer=SqliteSaver(conn))
        config: Any = {"configurable": {"thread_id": thread}}
        context = Context(model="fake", agents="kiss,testing", rounds=rounds)
        seen = 0
        for update in graph.stream(
            {"problem": "Pick a queue"}, config, context=context, stream_mode="updates"
        ):
            seen += node in update
            if seen >= times:
                return
    raise AssertionError(f"{node} never ran {times} times")


def fork_bounds(page: str) -> tuple[int, int] | None:
    found = re.search(r'<input name="round" type="number" min="(\d+)" max="(\d+)"', page)
    return (int(found[1]), int(found[2])) if found else None


def test_a_fork_is_offered_only_at_the_end_of_a_round_that_ended(
    client: TestClient, db: Path
) -> None:
    stopped_after(db, "in-round-1", "critique")
    assert "interrupted" in text_of(client.get("/debates/in-round-1").text)
    assert fork_bounds(client.get("/debates/in-round-1").text) is None
    stopped_after(db, "in-round-2", "critique", times=2)
    assert fork_bounds(client.get("/debates/in-round-2").text) == (1, 1)
    form = {"csrf": token_of(client), "round": "1", "model": "", "agents": "", "rounds": ""}
    forked = client.post("/debates/in-round-2/fork", data=form, follow_redirects=False)
    assert forked.status_code == 303  # what the form offers succeeds
    fork = forked.headers["location"].rsplit("/", 1)[1]
    wait_for(client, fork, "done")
    assert fork_bounds(client.get(f"/debates/{fork}").text) == (1, 2)
    assert fork_bounds(client.get("/debates/in-round-2").text) == (1, 1)
