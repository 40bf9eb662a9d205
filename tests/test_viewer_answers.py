"""A person's words at ``debate serve`` are never lost: each answer names its question, is kept until the run
takes it, and is refused (shown back) when it answers a question that no longer waits.

Each test talks to a real ``debate serve`` process on a free loopback port, as a browser's forms would: the
old page sent again (back button, second tab, second click), an answer sent while the agents still work,
a server stopped before the run took the answer, a question a terminal is holding, a position stated in
fields. The agents are the ``fake`` model; the person is ``alice``.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

import httpx

from debate_engine.app.viewer.reading import Store
from tests.support.browser import served
from tests.support.debate_cli import cli_env, debate_command, finished_calls

ALICE = "human:alice"
WAITING = "waiting for a person"
QUESTION = re.compile(r'<legend>([^<]*)</legend>.*?<textarea id="answer-([0-9a-f]+)"', re.S)
"""A person's question on the page: its legend (the seat and the task), then its text box, named by its id."""


def text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def token(site: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', httpx.get(site + "/new").text)
    assert found
    return found[1]


def start(site: str, thread: str, **fields: str) -> None:
    """Start a 1-round debate of two agents and alice from the start form."""
    form = {
        "csrf": token(site),
        "problem": "Pick a rate limiter",
        "model": "fake",
        "rounds": "1",
        "agents": "kiss,testing",
        "humans": "alice",
        "thread_id": thread,
        **fields,
    }
    sent = httpx.post(site + "/new", data=form)
    assert sent.status_code == 303, text_of(sent.text)[:500]


def page(site: str, thread: str) -> str:
    return httpx.get(f"{site}/debates/{thread}").text


def until(check: Callable[[], Any], what: str, seconds: float = 60) -> Any:
    """Return ``check()``'s first true value, polled; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {seconds} s")


def status(site: str, thread: str) -> str:
    got = httpx.get(f"{site}/debates/{thread}/state")
    return str(got.json()["status"]) if got.status_code == 200 else ""


def offered(site: str, thread: str) -> list[tuple[str, str]]:
    """Return alice's questions the page offers a text box for, as (task, id)."""
    return [(unescape(legend), key) for legend, key in QUESTION.findall(page(site, thread))]


def questions(site: str, thread: str) -> list[tuple[str, str]]:
    """Return alice's questions the page offers a text box for, once the debate waits for her."""
    until(lambda: status(site, thread) == WAITING, f"question of {thread}")
    return offered(site, thread)


def answer(site: str, thread: str, fields: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{site}/debates/{thread}/answer", data={"csrf": token(site), **fields})


def transcript(db: Path, thread: str) -> list[dict[str, Any]]:
    """Return the debate's transcript as stored in its checkpoint."""

    async def read() -> list[dict[str, Any]]:
        store = Store(str(db))
        await store.open()
        try:
            return list((await store.values(thread)).get("transcript", []))
        finally:
            await store.close()

    return asyncio.run(read())


def alices(db: Path, thread: str, kind: str) -> list[dict[str, Any]]:
    return [t for t in transcript(db, thread) if t["speaker"] == ALICE and t["kind"] == kind]


def answer_the_rest(site: str, thread: str) -> None:
    """Answer each question alice is asked with words of its own until the debate is done."""
    deadline = time.monotonic() + 120
    while status(site, thread) != "done":
        assert time.monotonic() < deadline, f"{thread} never finished"
        asked = offered(site, thread) if status(site, thread) == WAITING else []
        if asked:
            sent = answer(
                site, thread, {f"answer-{key}": f"alice on: {task}" for task, key in asked}
            )
            assert sent.status_code == 303, text_of(sent.text)[:500]
        time.sleep(0.1)


def test_an_old_form_sent_again_passes_nothing_and_shows_the_questions_waiting_now(
    tmp_path: Path,
) -> None:
    db = tmp_path / "debates.sqlite"
    with served(db) as site:
        start(site, "stale")
        ((task, key),) = questions(site, "stale")
        assert "Propose" in task
        old = {f"answer-{key}": "One token bucket per client"}
        assert answer(site, "stale", old).status_code == 303
        until(lambda: len(questions(site, "stale")) == 2, "critiques")  # the debate moved on

        second_tab = {f"answer-{key}": "A fixed window, typed in a second tab"}
        emptied = {f"answer-{key}": ""}  # the back button's form, its box cleared
        for fields in (old, second_tab, emptied):  # old: a second click
            again = answer(site, "stale", fields)
            assert again.status_code == 409, text_of(again.text)[:500]
            shown = text_of(again.text)
            assert "Nothing was recorded" in shown
            assert "your turn: Critique kiss's proposal" in shown
            assert "your turn: Critique testing's proposal" in shown
        kept = text_of(answer(site, "stale", second_tab).text)
        assert "A fixed window, typed in a second tab" in kept  # the words sent are shown back
        assert [t["content"] for t in alices(db, "stale", "proposal")] == [
            "One token bucket per client"
        ]
        assert status(site, "stale") == WAITING and len(questions(site, "stale")) == 2
        answer_the_rest(site, "stale")
    mine = [t for t in transcript(db, "stale") if t["speaker"] == ALICE]
    assert len(mine) == 4 and "(passed)" not in [t["content"] for t in mine]
    critiques = sorted(t["content"] for t in mine if t["kind"] == "critique")
    assert critiques == [
        "alice on: human:alice, your turn: Critique kiss's proposal (round 1).",
        "alice on: human:alice, your turn: Critique testing's proposal (round 1).",
    ]


def test_an_answer_sent_while_the_agents_work_arrives_in_the_transcript(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    with served(db) as site:
        start(site, "early", model="fake:latency_ms=3000")
        ((_, key),) = questions(site, "early")
        assert finished_calls(db, "early") == 0  # the agents' proposals are still being written
        sent = answer(site, "early", {f"answer-{key}": "A sliding window in Redis"})
        assert sent.status_code == 303, text_of(sent.text)[:500]
        assert finished_calls(db, "early") == 0  # sent before the phase's agents were done
        shown = text_of(page(site, "early"))
        assert "Received" in shown and "A sliding window in Redis" in shown
        until(lambda: alices(db, "early", "proposal"), "proposal of alice")
        assert [t["content"] for t in alices(db, "early", "proposal")] == [
            "A sliding window in Redis"
        ]
        assert len(questions(site, "early")) == 2  # and the debate went on to her critiques


def test_an_answer_kept_before_delivery_survives_a_server_restart(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    with served(db) as site:
        start(site, "restart", model="fake:latency_ms=3000")
        ((_, key),) = questions(site, "restart")
        sent = answer(site, "restart", {f"answer-{key}": "Leaky bucket at the gateway"})
        assert sent.status_code == 303 and finished_calls(db, "restart") == 0
        assert "Received" in text_of(page(site, "restart"))
    # the server stopped before the agents finished: the run was cancelled, the answer never delivered
    assert not alices(db, "restart", "proposal")
    with served(db) as site:
        shown = page(site, "restart")
        assert "Received" in text_of(shown) and "Leaky bucket at the gateway" in text_of(shown)
        assert f'<textarea id="answer-{key}"' not in shown  # answered: no second form for it
        deliver = re.search(r'<form method="post" action="([^"]+/resume)"', shown)
        assert deliver, "no button delivers the kept answer"
        sent = httpx.post(site + deliver[1], data={"csrf": token(site)})
        assert sent.status_code == 303, text_of(sent.text)[:500]
        until(lambda: alices(db, "restart", "proposal"), "proposal of alice")
        assert [t["content"] for t in alices(db, "restart", "proposal")] == [
            "Leaky bucket at the gateway"
        ]


def test_a_question_a_terminal_holds_says_where_to_answer_it(tmp_path: Path) -> None:
    db, log = tmp_path / "debates.sqlite", tmp_path / "run.log"
    argv = ["run", "--model", "fake", "--rounds", "1", "--agents", "kiss,testing"]
    with open(log, "w") as err:
        terminal = subprocess.Popen(
            [*debate_command(), *argv, "--human", "alice", "--thread-id", "held", "--db", str(db)]
            + ["Pick a rate limiter"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env=cli_env(EDITOR=""),
        )
    assert terminal.stdin is not None
    try:
        until(lambda: "your turn: Propose" in log.read_text(), "question at the terminal")
        with served(db) as site:
            until(lambda: status(site, "held") == WAITING, "question on the page")
            shown = page(site, "held")
            assert "answer them in the terminal" in text_of(shown)
            assert "<textarea" not in shown and "Send and continue" not in shown
            key = re.findall(r'data-question="([0-9a-f]+)"', shown)[0]
            refused = answer(site, "held", {f"answer-{key}": "from the page"})
            assert refused.status_code == 409
            assert "another process runs this debate" in text_of(refused.text)
            terminal.stdin.write("from the terminal\n.\n")
            terminal.stdin.flush()
            until(lambda: alices(db, "held", "proposal"), "proposal typed at the terminal")
        assert [t["content"] for t in alices(db, "held", "proposal")] == ["from the terminal"]
    finally:
        terminal.kill()
        terminal.wait(timeout=30)


def test_a_position_is_stated_in_fields_and_a_pass_is_a_choice(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    with served(db) as site:
        start(site, "fields")
        ((_, key),) = questions(site, "fields")
        shown = page(site, "fields")
        for name in ("position", "reason", "confidence", "short", "pass"):
            assert f'name="{name}-{key}"' in shown, name
        typed = {
            f"answer-{key}": "One bucket per client, refilled each second",
            f"position-{key}": "Token bucket per client",
            f"reason-{key}": "Bursts stay bounded",
        }
        wrong = answer(site, "fields", {**typed, f"confidence-{key}": "high"})
        assert wrong.status_code == 400
        assert "confidence 'high' is not a whole number from 0 to 100" in text_of(wrong.text)
        assert 'value="Token bucket per client"' in wrong.text  # what was typed is kept
        assert "One bucket per client, refilled each second</textarea>" in wrong.text
        blank = answer(site, "fields", {f"answer-{key}": ""})
        assert blank.status_code == 400 and "tick pass" in text_of(blank.text)
        assert status(site, "fields") == WAITING and not alices(db, "fields", "proposal")

        sent = answer(site, "fields", {**typed, f"confidence-{key}": "80", f"short-{key}": ""})
        assert sent.status_code == 303, text_of(sent.text)[:500]
        until(lambda: alices(db, "fields", "proposal"), "proposal of alice")
        (proposal,) = alices(db, "fields", "proposal")
        assert proposal["content"] == "One bucket per client, refilled each second"
        assert proposal["position"] == {
            "position": "Token bucket per client",
            "reason": "Bursts stay bounded",
            "confidence": 80,
            "answer": "",
        }
        (first, _), (second, _) = asked = sorted(questions(site, "fields"))
        assert "Critique kiss" in first and "Critique testing" in second
        assert not any(f'name="position-{k}"' in page(site, "fields") for _, k in asked)
        passed = {f"pass-{asked[0][1]}": "1", f"answer-{asked[1][1]}": "Too coarse"}
        assert answer(site, "fields", passed).status_code == 303
        until(lambda: len(alices(db, "fields", "critique")) == 2, "critiques of alice")
    assert sorted(t["content"] for t in alices(db, "fields", "critique")) == [
        "(passed)",
        "Too coarse",
    ]
