"""The viewer's pages, in-process over a database of real fake-model debates: what each page shows, escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from debate_engine.app.viewer import create_app, pages
from tests.support.viewer_debates import SCRIPT, three_debates


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("viewer") / "debates.sqlite"
    three_debates(path)
    return path


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(db))) as client:
        yield client


def text_of(html: str) -> str:
    """Return a page's text without tags, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_list_shows_every_debate_newest_first_with_its_status_protocol_verdict_and_origin(
    client: TestClient,
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    threads = re.findall(r'data-thread="([^"]+)"', page.text)
    assert threads == ["phases-1-fork", "table-1", "phases-1"]
    shown = text_of(page.text)
    assert "Debates 3" in shown and shown.count("done") >= 3
    assert "roundtable" in shown and "phases" in shown
    assert "verdict (judge): 3 of 3 agents agree" in shown
    assert "fork of round 2 of phases-1" in shown


def test_the_list_is_searched_by_problem_and_paged(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = client.get("/", params={"q": "SESSION store"})
    assert re.findall(r'data-thread="([^"]+)"', found.text) == ["table-1"]
    monkeypatch.setattr(pages, "ROWS_PER_PAGE", 2)
    first, second = client.get("/"), client.get("/", params={"page": 2})
    assert len(re.findall(r"data-thread=", first.text)) == 2 and 'rel="next"' in first.text
    assert re.findall(r'data-thread="([^"]+)"', second.text) == ["phases-1"]


def test_a_debate_shows_its_grid_of_proposals_critiques_and_refinements(client: TestClient) -> None:
    page = client.get("/debates/phases-1")
    assert page.status_code == 200
    shown = text_of(page.text)
    assert len(re.findall(r'<tr id="round-\d+">', page.text)) == 3
    assert shown.count("proposal") >= 3 and shown.count("refinement") >= 9
    for critic, target in (("architect", "kiss"), ("kiss", "testing"), ("testing", "architect")):
        assert f"critique of {target}" in shown, critic
    assert 'src="/debates/phases-1/positions.svg' in page.text


def test_a_debate_shows_positions_verdict_and_figures(client: TestClient) -> None:
    shown = text_of(client.get("/debates/phases-1").text)
    assert "Positions" in shown and "proposed" in shown and "round 3" in shown
    assert "answer 47" in shown and "agreement 3 of 3 agents" in shown
    assert "why it stopped ran every round it was given" in shown
    for figure in ("time running", "model calls", "prompt tokens", "cached prompt tokens", "cost"):
        assert figure in shown


def test_a_roundtable_shows_its_turns_paged(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages.view, "TURNS_PER_PAGE", 3)
    first = client.get("/debates/table-1")
    assert (
        "Turns" in text_of(first.text)
        and len(re.findall(r"<li><details class=\"turn", first.text)) == 3
    )
    last = client.get("/debates/table-1", params={"page": 99})  # past the end: the last page
    assert (
        len(re.findall(r"<li><details class=\"turn", last.text)) == 1
        and "turn 7: architect" in last.text
    )


def test_model_text_is_escaped_on_every_page(client: TestClient) -> None:
    for url in ("/", "/debates/phases-1", "/debates/phases-1/live", "/debates/phases-1/turns/4"):
        page = client.get(url)
        assert page.status_code == 200, url
        assert SCRIPT not in page.text and "<img src=x" not in page.text, url
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in client.get("/debates/phases-1").text


def test_every_page_forbids_inline_script(client: TestClient) -> None:
    policy = client.get("/debates/phases-1").headers["content-security-policy"]
    assert (
        "script-src 'self'" in policy
        and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    )
    assert client.get("/").headers["x-content-type-options"] == "nosniff"
    chart = client.get("/debates/phases-1/positions.svg")
    assert chart.headers["content-type"].startswith("image/svg+xml") and "<svg" in chart.text


def test_an_unknown_thread_is_a_404_page_linking_to_the_list(client: TestClient) -> None:
    for url in (
        "/debates/nobody",
        "/debates/nobody/memory",
        "/debates/phases-1/turns/9999",
        "/nowhere",
    ):
        page = client.get(url)
        assert page.status_code == 404, url
        assert '<a href="/">Back to the list of debates</a>' in page.text
        assert "Traceback" not in page.text
    assert "there is no debate 'nobody'" in text_of(client.get("/debates/nobody").text)
    assert client.get("/debates/nobody/state").status_code == 404


def test_the_memory_page_shows_what_a_turn_saw_and_that_nothing_was_left_out(
    client: TestClient,
) -> None:
    memory = client.get("/debates/phases-1/memory")
    assert memory.status_code == 200 and "What each turn's speaker saw" in memory.text
    refinement = (
        9 + 3 + 6
    )  # round 2's first refinement: proposals 3, critiques 6, refinements 3, critiques 6
    page = client.get(f"/debates/phases-1/turns/{refinement}")
    shown = text_of(page.text)
    assert "What architect saw" in shown or "saw" in shown
    assert "-token budget" in shown and "None was left out." in shown
    assert 'class="strip"' in page.text and 'class="neither"' not in page.text


def test_the_state_record_is_small_json(client: TestClient) -> None:
    now = client.get("/debates/phases-1/state").json()
    assert now["status"] == "done" and now["phase"] == "done" and now["checkpoint"]


def test_a_fork_shows_its_family_with_the_flip_marked(client: TestClient) -> None:
    shown = text_of(client.get("/debates/phases-1-fork").text)
    assert "Forks" in shown and "phases-1 47 (3 agree)" in shown
    assert "phases-1-fork from round 2 46 (3 agree) flipped" in shown
    assert "before the fork" in shown  # the kept rounds' cost, apart from the fork's own


def test_the_start_form_offers_the_contexts_fields_with_descriptions_and_ranges(
    client: TestClient,
) -> None:
    page = client.get("/new")
    shown = text_of(page.text)
    for name in ("model", "agents", "humans", "rounds", "max_cost", "stop_rule"):
        assert f'name="{name}"' in page.text, name
    assert 'name="turns"' not in page.text  # the roundtable's, shown with its protocol
    assert 'name="turns"' in client.get("/new?protocol=roundtable").text
    assert "Debate rounds (>= 1)" in shown and "Range 1 to 10,000." in shown
    assert 'name="csrf"' in page.text
