"""What the viewer's pages may change: start, answer, resume and fork debates, each behind the page's own token."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from debate_engine.app.store.database import athread_lock
from debate_engine.app.viewer import create_app
from tests.support.viewer_debates import FLIPPING, ORIGINAL, PROBLEM, SCRIPT, run


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "debates.sqlite"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(db))) as client:
        yield client


def token_of(client: TestClient, url: str = "/new") -> str:
    """Return the form token the server put in one of its pages."""
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(url).text)
    assert found, url
    return found[1]


def wait_for(
    client: TestClient, thread: str, *statuses: str, turns: int = 0, seconds: float = 60
) -> dict[str, Any]:
    """Poll a debate's state until its status is one of ``statuses`` (with at least ``turns`` turns)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = client.get(f"/debates/{thread}/state")
        if (
            got.status_code == 200
            and got.json()["status"] in statuses
            and got.json()["turns"] >= turns
        ):
            return got.json()
        time.sleep(0.05)
    raise AssertionError(
        f"{thread} never reached {statuses}: {client.get(f'/debates/{thread}/state').text}"
    )


def start(client: TestClient, **fields: str) -> Any:
    form = {
        "csrf": token_of(client),
        "model": "fake",
        "rounds": "1",
        "agents": "kiss,testing",
        **fields,
    }
    return client.post("/new", data=form, follow_redirects=False)


def text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_post_without_the_pages_token_is_refused(client: TestClient, db: Path) -> None:
    run(db, *ORIGINAL, PROBLEM)
    for url in (
        "/new",
        "/debates/phases-1/resume",
        "/debates/phases-1/fork",
        "/debates/phases-1/answer",
    ):
        refused = client.post(url, data={"problem": "x", "round": "1", "csrf": "forged"})
        assert refused.status_code == 403, url
        assert "not from this viewer's own page" in text_of(refused.text)
    assert len(re.findall(r"data-thread=", client.get("/").text)) == 1  # nothing was started


def test_a_debate_started_from_the_form_runs_to_its_verdict(client: TestClient) -> None:
    sent = start(client, problem="Pick a queue", thread_id="from-form")
    assert sent.status_code == 303 and sent.headers["location"].endswith("/debates/from-form")
    wait_for(client, "from-form", "done")
    shown = text_of(client.get("/debates/from-form").text)
    assert "Pick a queue" in shown and "Verdict" in shown and "kiss, testing" in shown


def test_a_malformed_form_names_the_field_and_keeps_what_was_typed(client: TestClient) -> None:
    page = start(client, problem="Keep this problem", rounds="three", max_cost="-1")
    assert page.status_code == 400
    shown = text_of(page.text)
    assert "rounds: not a whole number" in shown and "max_cost: -1 is out of range" in shown
    assert "Keep this problem</textarea>" in page.text and 'value="three"' in page.text
    checked = start(client, problem="Keep this too", agents="nobody-like-this")
    assert checked.status_code == 400 and "agents" in text_of(checked.text)
    assert 'value="nobody-like-this"' in checked.text


def test_answering_a_seated_persons_question_finishes_the_debate(client: TestClient) -> None:
    start(
        client,
        problem="Pick a cache",
        protocol="roundtable",
        turns="3",
        agents="architect,security",
        humans="alice",
        rounds="",
        thread_id="with-alice",
    )
    wait_for(client, "with-alice", "waiting for a person")
    page = client.get("/debates/with-alice").text
    assert "human:alice, your turn: Speak in the roundtable (turn 3)" in text_of(page)
    field = re.search(r'<textarea id="(answer-[^"]+)"', page)
    assert field
    sent = client.post(
        "/debates/with-alice/answer",
        data={"csrf": token_of(client), field[1]: SCRIPT},
        follow_redirects=False,
    )
    assert sent.status_code == 303
    wait_for(client, "with-alice", "done")
    done = client.get("/debates/with-alice").text
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in done and SCRIPT not in done


def test_a_stopped_debate_resumes_from_the_page(db: Path) -> None:
    with TestClient(create_app(str(db))) as client:
        start(
            client, problem="Pick a lock", model="fake:latency_ms=200", rounds="3", thread_id="slow"
        )
        wait_for(client, "slow", "running", turns=2)
    # the server stopped under the run: it keeps its finished turns and stands interrupted
    with TestClient(create_app(str(db))) as client:
        assert client.get("/debates/slow/state").json()["status"] == "interrupted"
        assert "Resume this debate" in client.get("/debates/slow").text
        sent = client.post(
            "/debates/slow/resume", data={"csrf": token_of(client)}, follow_redirects=False
        )
        assert sent.status_code == 303
        wait_for(client, "slow", "done")
        again = client.post("/debates/slow/resume", data={"csrf": token_of(client)})
        assert again.status_code == 409 and "already finished" in text_of(again.text)


def test_a_fork_from_the_page_runs_and_shows_the_flip(client: TestClient, db: Path) -> None:
    run(db, *ORIGINAL, PROBLEM)
    model, agents = FLIPPING[1], FLIPPING[3]
    form = {"csrf": token_of(client), "round": "2", "model": model, "agents": agents, "rounds": ""}
    sent = client.post("/debates/phases-1/fork", data=form, follow_redirects=False)
    assert sent.status_code == 303
    fork = sent.headers["location"].rsplit("/", 1)[1]
    assert fork.startswith("phases-1-fork-r2-")
    wait_for(client, fork, "done")
    assert fork in client.get("/").text
    assert "flipped" in text_of(client.get(f"/debates/{fork}").text)
    late = client.post("/debates/phases-1/fork", data={**form, "round": "9"})
    assert late.status_code == 400 and "has finished rounds 1-3" in text_of(late.text)


def test_an_access_token_guards_every_page_when_given(db: Path) -> None:
    run(db, *ORIGINAL, PROBLEM)
    with TestClient(create_app(str(db), access="s3cret-token")) as client:
        assert client.get("/").status_code == 403
        assert client.get("/static/viewer.css").status_code == 403
        entered = client.get("/?token=s3cret-token", follow_redirects=False)
        assert entered.status_code == 303 and "token" not in entered.headers["location"]
        assert client.get("/").status_code == 200  # the cookie now carries it
        assert "s3cret-token" not in client.get("/debates/phases-1").text


def test_no_secret_reaches_a_page(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run(
        db,
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--thread-id",
        "k",
        "Rotate key Zq8xW7vK2pLm now",
    )
    monkeypatch.setenv("OPENAI_API_KEY", "Zq8xW7vK2pLm")
    with TestClient(create_app(str(db))) as client:
        for url in ("/", "/debates/k", "/debates/k/memory", "/debates/k/turns/0"):
            assert "Zq8xW7vK2pLm" not in client.get(url).text, url


def test_the_agents_clarifying_questions_are_answered_from_the_page(client: TestClient) -> None:
    start(client, problem="Pick a rate limiter", clarify="on", max_questions="2", thread_id="asks")
    wait_for(client, "asks", "waiting for a person")
    page = client.get("/debates/asks").text
    assert "The agents ask before they debate" in page
    fields = re.findall(r'<input id="(answer-[^"]+)"', page)
    assert fields
    answers = {name: f"answer {n}" for n, name in enumerate(fields)}
    sent = client.post("/debates/asks/answer", data={"csrf": token_of(client), **answers})
    assert sent.status_code == 200
    wait_for(client, "asks", "done")
    assert "answer 0" in text_of(client.get("/debates/asks").text)


def test_a_debate_that_cannot_start_says_why_on_the_form(client: TestClient, db: Path) -> None:
    """Another process holds the thread: the run is refused, and the form says so."""

    async def hold() -> None:
        async with athread_lock(str(db), "held"):
            page = start(client, problem="Pick a lease", thread_id="held")
            assert page.status_code == 400
            assert "running in another process" in text_of(page.text)

    asyncio.run(hold())
