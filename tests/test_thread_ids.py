"""One rule for a new thread id at every entry point; any stored id still opens, and is quoted, in the viewer.

A new id is refused with exit 2 (the command line) or a form error (the viewer) before its thread
exists. A debate made through LangGraph's own API may have any id: the command line reads it as it
is, the viewer quotes it in every link and redirect, and one holding a ``/`` (which no web address
of the viewer can carry) is listed without a link, saying why.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from starlette.testclient import TestClient

from debate_engine.app.store.thread_ids import RULE, ThreadIdError, check_thread_id
from debate_engine.app.viewer import create_app
from debate_engine.config.context import Context
from debate_engine.graph.builder import compile_debate
from tests.support.browser import served
from tests.support.debate_cli import in_process
from tests.test_queue import closed_port
from tests.test_viewer_actions import start, text_of

BAD = {
    "a/b": "holds '/'",
    "what?": "holds '?'",
    "issue#41": "holds '#'",
    "my debate": "holds U+0020 (space)",
    "100%": "holds '%'",
    "tab\there": "holds U+0009 (a control character)",
    "bell\x07": "holds U+0007 (a control character)",
    "no\u00a0break": "holds U+00A0 (no-break space)",
    "-looks-like-an-option": "starts with '-'",
    "..": "starts with '.'",
    "x" * 129: "is 129 characters long",
}
"""Ids a person may type, and what the refusal says of each."""
ODD = "50% sure? #1 pick"
"""An id LangGraph's API takes as it is: a ``?``, a ``#``, a ``%`` and spaces."""
RUN = ("--model", "fake", "--agents", "kiss,testing", "--rounds", "1")


def stored_threads(db: Path) -> set[str]:
    """Return every thread the database holds a checkpoint of (none when there is no database yet)."""
    if not db.exists():
        return set()
    with sqlite3.connect(db) as conn:
        try:
            return {row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        except sqlite3.OperationalError:  # the tables were never made
            return set()


def made_through_langgraph(db: Path, thread: str, *, steps: int | None = None) -> None:
    """Store a debate under ``thread`` with the graph's own API, as an SDK user would; ``steps`` stops it early."""
    with sqlite3.connect(db, check_same_thread=False) as conn:
        graph = compile_debate(checkpointer=SqliteSaver(conn))
        config: Any = {"configurable": {"thread_id": thread}}
        context = Context(model="fake", agents="kiss,testing", rounds=2)
        for n, _ in enumerate(
            graph.stream({"problem": f"Pick a queue for {thread}"}, config, context=context)
        ):
            if steps is not None and n + 1 >= steps:
                break


def refused(err: str, bad: str) -> bool:
    """Return whether a refusal names the id (long ones are cut by the command line), what is wrong, and the rule."""
    named = repr(bad) in err or (len(bad) > 100 and repr(bad)[:30] in err)
    return named and BAD[bad] in err and RULE in err and "Traceback" not in err


# --- the rule ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thread",
    [
        "debate-20260101-120000-abc123",
        "compare:queues:phases:t1:0",
        "me@host.example",
        "débat_2",
        "x" * 128,
    ],
)
def test_the_ids_the_engine_makes_and_plain_words_pass(thread: str) -> None:
    assert check_thread_id(thread) == thread


@pytest.mark.parametrize("bad", BAD, ids=[repr(b)[:20] for b in BAD])
def test_a_refusal_names_the_id_the_character_and_the_rule(bad: str) -> None:
    with pytest.raises(ThreadIdError) as raised:
        check_thread_id(bad)
    assert raised.value.code == 2 and refused(raised.value.message(), bad)


# --- the command line -------------------------------------------------------------------------------------------


def test_debate_run_refuses_each_bad_id_before_a_thread_exists(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    for bad in BAD:
        done = in_process("run", *RUN, f"--thread-id={bad}", "--db", str(db), "Pick a queue")
        assert done.returncode == 2 and refused(done.stderr, bad), (bad, done.stderr)
    empty = in_process("run", *RUN, "--thread-id=", "--db", str(db), "Pick a queue")
    assert empty.returncode == 2 and "the thread id is empty" in empty.stderr
    assert stored_threads(db) == set()


def test_debate_fork_refuses_each_bad_id_before_a_thread_exists(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    assert (
        in_process(
            "run", *RUN, "--rounds", "2", "--thread-id", "orig", "--db", str(db), "Pick"
        ).returncode
        == 0
    )
    for bad in BAD:
        done = in_process("fork", "orig", "--round", "1", f"--thread-id={bad}", "--db", str(db))
        assert done.returncode == 2 and refused(done.stderr, bad), (bad, done.stderr)
    assert stored_threads(db) == {"orig"}


def test_debate_probe_refuses_each_bad_id_before_a_thread_exists(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    for bad in BAD:
        done = in_process(
            "probe",
            *RUN,
            "--facts",
            "1",
            "--plant-rounds",
            "1",
            f"--thread-id={bad}",
            "--db",
            str(db),
        )
        assert done.returncode == 2 and refused(done.stderr, bad), (bad, done.stderr)
    assert stored_threads(db) == set()


def test_debate_submit_refuses_each_bad_id_before_reaching_the_queue(tmp_path: Path) -> None:
    url = f"postgresql://127.0.0.1:{closed_port()}/debates"  # reaching it would be another error
    for bad in BAD:
        done = in_process("submit", "--model", "fake", f"--thread-id={bad}", "--db", url, "Pick")
        assert done.returncode == 2 and refused(done.stderr, bad), (bad, done.stderr)
        assert "cannot reach" not in done.stderr
    lines = tmp_path / "problems.jsonl"
    lines.write_text(
        "".join(json.dumps({"problem": "Pick", "thread_id": bad}) + "\n" for bad in BAD)
    )
    done = in_process("submit", "--model", "fake", "--problems", str(lines), "--db", url)
    assert done.returncode == 2 and "nothing was queued" in done.stderr, done.stderr
    for number, bad in enumerate(BAD, 1):
        assert f"line {number}: thread id " in done.stderr and BAD[bad] in done.stderr
    # An id alone names a stored debate to continue: it is looked up, never refused by the rule.
    alone = in_process("submit", "--thread-id", ODD, "--db", url)
    assert alone.returncode == 2 and "cannot reach PostgreSQL" in alone.stderr, alone.stderr


def test_a_stored_odd_id_is_read_as_it_is_though_no_new_debate_may_take_it(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    for thread in (ODD, "team/queues"):
        made_through_langgraph(db, thread)
        shown = in_process("show", thread, "--db", str(db))
        assert shown.returncode == 0 and f"thread {thread}:" in shown.stderr, shown.stderr
        assert in_process("report", "--thread", thread, "--db", str(db)).returncode == 0
        assert (
            in_process("resume", thread, "--db", str(db)).returncode == 0
        )  # finished: nothing to do
        again = in_process("run", *RUN, "--thread-id", thread, "--db", str(db), "Pick")
        assert again.returncode == 2 and RULE in again.stderr, again.stderr
    assert stored_threads(db) == {ODD, "team/queues"}


# --- the viewer ---------------------------------------------------------------------------------------------------


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    db = tmp_path / "debates.sqlite"
    with TestClient(create_app(str(db))) as client:
        yield client, db


def test_the_start_form_refuses_each_bad_id_on_the_form_and_starts_nothing(
    viewer: tuple[TestClient, Path],
) -> None:
    client, db = viewer
    for bad in BAD:
        page = start(client, problem="Keep this problem", thread_id=bad)
        assert page.status_code == 400, (bad, page.status_code)
        error = re.search(r'<p class="error-text">thread_id: ([^<]*)</p>', page.text)
        assert error and refused(html.unescape(error[1]), bad), (bad, text_of(page.text)[:300])
        assert (
            f'value="{html.escape(bad)}"' in page.text
            and "Keep this problem</textarea>" in page.text
        )
    assert client.app.state.runs.tasks == {}  # no run was started
    assert "No debates yet" in text_of(client.get("/").text)
    assert stored_threads(db) == set()


def test_an_id_with_a_slash_is_listed_without_a_link_saying_why(
    viewer: tuple[TestClient, Path],
) -> None:
    client, db = viewer
    made_through_langgraph(db, "team/queues")
    listed = client.get("/").text
    assert 'data-thread="team/queues"' in listed
    assert "/debates/team%2Fqueues" not in listed and "/debates/team/queues" not in listed
    assert "No page: its thread id holds a '/'" in text_of(listed)
    assert "debate show team/queues" in text_of(listed)


def test_an_odd_id_opens_from_the_list_and_each_action_lands_on_its_page(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    made_through_langgraph(db, ODD, steps=3)  # stopped after setup and the first proposals
    with served(db) as site:
        listed = httpx.get(f"{site}/").text
        link = f"/debates/{quote(ODD, safe='')}"
        assert f'href="{link}"' in listed
        page = httpx.get(site + link)
        assert page.status_code == 200 and f"Pick a queue for {ODD}" in text_of(page.text)
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token
        resumed = httpx.post(f"{site}{link}/resume", data={"csrf": token[1]})
        assert resumed.status_code == 303, text_of(resumed.text)[:300]
        assert resumed.headers["location"] == site + link
        landed = httpx.get(resumed.headers["location"])
        assert landed.status_code == 200 and ODD in text_of(landed.text)
        _until_done(site, link)
        forked = httpx.post(
            f"{site}{link}/fork",
            data={"csrf": token[1], "round": "1", "model": "", "agents": "", "rounds": ""},
        )
        assert forked.status_code == 303, text_of(forked.text)[:300]
        fork = re.fullmatch(
            re.escape(site + link) + r"-fork-r1-[0-9a-f]{6}", forked.headers["location"]
        )
        assert fork, forked.headers["location"]
        landed = httpx.get(forked.headers["location"])
        assert landed.status_code == 200 and f"fork of {ODD}" in text_of(landed.text)


def _until_done(site: str, link: str, seconds: float = 60) -> None:
    """Wait until the debate at ``link`` has finished."""
    deadline = time.monotonic() + seconds
    while httpx.get(f"{site}{link}/state").json()["status"] != "done":
        assert time.monotonic() < deadline, httpx.get(f"{site}{link}/state").text
        time.sleep(0.1)


def test_the_start_form_says_the_rule_before_anything_is_typed(
    viewer: tuple[TestClient, Path],
) -> None:
    client, _ = viewer
    assert RULE in text_of(client.get("/new").text)
