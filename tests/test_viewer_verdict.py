"""The viewer opens with the decision and says why any debate stopped, in ``debate list``'s own words.

The debates are real: made by the command line in this process (the fake model), one of them failing
on every call (``fake:fail=transport``, exit 3) and one stopped by its spend cap; the viewer reads
them from the database as it would after another process made them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import escape, unescape
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Interrupt
from starlette.testclient import TestClient

from debate_engine.app.cli.main import main
from debate_engine.app.reports.standing import (
    DONE,
    INTERRUPTED,
    RUNNING,
    STATES,
    WAITING,
    reason_of,
)
from debate_engine.app.viewer import create_app
from tests.support.debate_cli import in_process
from tests.support.viewer_debates import run, three_debates

FAILED = ("run", "--model", "fake:fail=transport", "--thread-id", "boom", "Which queue, A or B?")
CAPPED = (
    "run",
    "--model",
    "fake:words=150",
    "--rounds",
    "10",
    "--max-tokens",
    "30000",
    "--thread-id",
    "capped",
    "Pick a rate limiter",
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verdict") / "debates.sqlite"
    three_debates(path)
    run(path, *CAPPED)
    assert main([*FAILED[:-1], "--db", str(path), "--quiet", FAILED[-1]]) == 3
    return path


@pytest.fixture(scope="module")
def listed(db: Path) -> dict[str, dict[str, Any]]:
    """Return ``debate list --json``'s rows by thread, as a user's script reads them."""
    done = in_process("list", "--all", "--json", "--db", str(db))
    assert done.returncode == 0, done.stderr
    return {row["thread"]: row for row in map(json.loads, done.stdout.splitlines())}


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(db))) as client:
        yield client


def text_of(html: str) -> str:
    """Return a page's text without tags, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_failed_cli_runs_page_says_why_in_debate_lists_words(
    client: TestClient, listed: dict[str, dict[str, Any]]
) -> None:
    row = listed["boom"]
    assert row["status"] == INTERRUPTED
    assert row["why"].startswith("a model call failed at round 0/3, after setup: ")
    assert "architect on fake:fail=transport: ConnectionError: fake transport failure" in row["why"]
    assert row["why"].endswith("(3 calls failed)")
    page = client.get("/debates/boom")
    shown = text_of(page.text)
    assert f"{row['status']} round 0 of 3" in shown and f"why: {row['why']}" in shown
    assert shown.index(row["why"]) < shown.index("No round has begun yet")
    assert "stopped" not in re.findall(r'class="badge [^"]*">([^<]+)<', page.text)
    for agent in (
        "architect",
        "performance",
        "security",
    ):  # each failed attempt, from the checkpoint
        assert f"{agent} proposal fake:fail=transport failed ConnectionError: fake" in shown
    assert client.get("/debates/boom/state").json()["status"] == row["status"]
    assert text_of(client.get("/debates/boom/live").text).count(row["why"]) == 1
    listing = client.get("/").text
    assert f'title="{escape(row["why"])}">{row["status"]}</span>' in listing


def test_every_debate_has_one_status_word_in_the_list_the_page_and_its_state(
    client: TestClient, listed: dict[str, dict[str, Any]]
) -> None:
    listing = client.get("/").text
    badges = dict(
        re.findall(r'data-thread="([^"]+)">.*?class="badge [^"]*"[^>]*>([^<]+)<', listing, re.S)
    )
    assert set(listed) == set(badges) == {"phases-1", "table-1", "phases-1-fork", "capped", "boom"}
    for thread, row in listed.items():
        assert row["status"] in STATES
        assert badges[thread] == row["status"], thread
        assert client.get(f"/debates/{thread}/state").json()["status"] == row["status"], thread


def test_a_capped_debate_names_its_cap_with_its_limit(
    client: TestClient, listed: dict[str, dict[str, Any]]
) -> None:
    row = listed["capped"]
    found = re.fullmatch(r"stopped early at the spend cap in round (\d+)", row["why"])
    assert row["status"] == DONE and found, row["why"]
    shown = text_of(client.get("/debates/capped").text)
    assert (
        f"why it stopped stopped early at the spend cap (at most 30,000 tokens) in round {found[1]}"
        in shown
    )


def test_a_finished_debate_opens_with_its_verdict_then_dissent_and_cruxes_then_the_rounds(
    client: TestClient,
) -> None:
    page = client.get("/debates/capped").text
    order = [
        'class="verdict"',
        "winning position",
        "agreement",
        "why it stopped",
        "cost",
        'class="dissent-cruxes"',
        'class="dissent"',
        "Cruxes",
        'id="round-1"',
        'class="positions"',
        'class="figures"',
    ]
    at = [page.index(mark) for mark in order]
    assert at == sorted(at), dict(zip(order, at, strict=True))
    for thread, first in (("phases-1", 'id="round-1"'), ("table-1", '<ol class="turns">')):
        page = client.get(f"/debates/{thread}").text
        assert page.index('class="verdict"') < page.index(first), thread
    shown = text_of(client.get("/debates/phases-1").text)
    decision = shown[shown.index("Verdict") : shown.index("Rounds")]
    assert "answer 47 winning position The answer is 47." in decision
    assert "agreement 3 of 3 agents (architect, kiss, testing)" in decision
    assert "why it stopped ran every round it was given: 3 rounds" in decision
    assert re.search(r"cost \$0\.0000 · [\d,]+ tokens · 31 model calls · ", decision)


def test_the_list_shows_each_debates_winning_position(client: TestClient) -> None:
    page = client.get("/").text
    assert "<th>winning position</th>" in page
    cells = dict(re.findall(r'data-thread="([^"]+)">.*?<td class="winner">(.*?)</td>', page, re.S))
    assert text_of(cells["phases-1"]).startswith("47 The answer is 47.")
    assert text_of(cells["phases-1-fork"]).startswith("46 The answer is 46.")  # the fork flipped it
    assert "verdict (judge): 1 of 2 agents agree, 1 dissent" in text_of(cells["table-1"])
    assert text_of(cells["boom"]) == "no verdict yet"


def status(phase: str = "propose", round_no: int = 1) -> dict[str, Any]:
    return {"problem": "p", "phase": phase, "round": round_no, "rounds": 3, "turns": 3}


@pytest.mark.parametrize(
    ("state", "values", "writes", "said"),
    [
        (
            INTERRUPTED,
            {"status": status()},
            [("t", "__error__", "CancelledError()")],
            "Ctrl-C, a stop or a signal ended the run at round 1/3, after propose",
        ),
        (
            INTERRUPTED,
            {"status": status("refine", 2)},
            [],
            "the process running it ended at round 2/3, after refine without a word (killed, or the machine stopped)",
        ),
        (
            INTERRUPTED,
            {"status": status()},
            [("t", "__error__", "StorageError('the debate database d.sqlite failed')")],
            "an error ended the run at round 1/3, after propose: StorageError: the debate database d.sqlite failed",
        ),
        (
            WAITING,
            {"status": status()},
            [
                (
                    "t",
                    "__interrupt__",
                    [
                        Interrupt(
                            {"type": "human_turn", "seat": "human:ann", "task": "Critique kiss"}
                        )
                    ],
                )
            ],
            "waiting for human:ann's turn: Critique kiss",
        ),
        (
            WAITING,
            {"status": status("setup", 0)},
            [
                (
                    "t",
                    "__interrupt__",
                    [Interrupt({"questions": [{"agent_id": "a", "questions": ["x", "y"]}]})],
                )
            ],
            "waiting for a person to answer 2 questions the agents asked",
        ),
        (RUNNING, {"status": status()}, [], "running: round 1/3, after propose"),
        (
            DONE,
            {
                "status": status("done", 2),
                "stopped": "timeout",
                "settings": {"protocol": "phases", "round_timeout_s": 90.0},
            },
            [],
            "stopped early at the time limit per round (90 s) in round 2",
        ),
        (
            DONE,
            {
                "status": status("done", 2),
                "stopped": "budget",
                "settings": {"cap": {"max_tokens": 12000, "max_cost": 0.5}},
            },
            [],
            "stopped early at the spend cap (at most 12,000 tokens and at most $0.5) in round 2",
        ),
        (
            DONE,
            {
                "status": status("done", 3),
                "stopped": "convergence",
                "stop_reason": {"round": 2, "reason": "the agents agree on 46"},
            },
            [],
            "stopped early in round 2: the agents agree on 46",
        ),
        (
            DONE,
            {"status": {**status("done", 1), "rounds": 1}, "turn_count": 1},
            [],
            "ran every turn it was given: 1 turn",
        ),
    ],
    ids=[
        "ctrl-c",
        "killed",
        "error",
        "a-persons-turn",
        "questions",
        "running",
        "timeout",
        "cap",
        "rule",
        "turns",
    ],
)
def test_why_a_debate_stands_so_is_said_for_every_way_it_stops(
    state: str, values: Any, writes: Any, said: str
) -> None:
    assert reason_of(state, values, writes) == said
