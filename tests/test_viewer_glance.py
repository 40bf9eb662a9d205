"""The viewer read at a glance: one name per turn on every page, counts printed alike, the list filtered, and the
comparison page showing what ``debate compare`` prints.

The debates are real (the fake model, made in this process): the three of ``viewer_debates``, a roundtable whose
briefings put turns before its own (so a turn's place in the transcript is not its number), and a comparison
whose table the command line printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from starlette.testclient import TestClient

from debate_engine.app.cli.main import main
from debate_engine.app.reports.markdown import render_report
from debate_engine.app.store.database import open_checkpointer
from debate_engine.app.viewer import create_app, pages
from debate_engine.app.viewer.templating import counted_number
from debate_engine.graph.roundtable import compile_roundtable
from tests.support.viewer_debates import SCRIPT, three_debates

BRIEFED = "briefed"
NOTE = f"The budget is two engineers. {SCRIPT}"
"""A briefing is a turn of the transcript: text a page must escape like any model's."""
COMPARE = ["compare", "builtin:arithmetic:3", "--protocols", "single,vote,debate", "--votes", "3"]
COMPARE += ["--model", "fake:solve=0.6", "--rounds", "1", "--agents", "architect,kiss"]


def briefed_roundtable(db: Path) -> dict[str, Any]:
    """Run a 4-turn roundtable whose briefings open turns 1 and 3 (stored in ``db``); return its values."""

    async def run() -> dict[str, Any]:
        async with open_checkpointer(str(db)) as saver:
            graph = compile_roundtable(checkpointer=saver)
            context = {"model": "fake", "agents": "architect,security", "turns": 4}
            context["briefings"] = {"1": NOTE, "3": "The SLA is 99.9%."}
            payload = {"problem": f"Pick a queue {SCRIPT}", "context": context}
            return dict(await graph.ainvoke(payload, {"configurable": {"thread_id": BRIEFED}}))

    return asyncio.run(run())


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("glance") / "debates.sqlite"
    three_debates(path)
    values = briefed_roundtable(path)
    printed, runs = io.StringIO(), path.parent / "runs.json"
    with contextlib.redirect_stdout(printed):
        assert main([*COMPARE, "--db", str(path), "--quiet", "--output", str(runs)]) == 0
    compared = json.loads(runs.read_text())
    return {"db": path, "briefed": values, "table": printed.getvalue(), "runs": compared["runs"]}


@pytest.fixture
def client(made: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(str(made["db"]))) as client:
        yield client


def text_of(html: str) -> str:
    """Return a page's text without tags, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def threads(html: str) -> list[str]:
    return re.findall(r'data-thread="([^"]+)"', unescape(html))


def test_a_turn_has_one_name_on_every_page_and_in_the_report(
    client: TestClient, made: dict[str, Any]
) -> None:
    transcript = made["briefed"]["transcript"]
    third = next(t for t in transcript if t["kind"] == "message" and t["round"] == 3)
    assert third["seq"] == 4, "the briefings put this turn at place 4: its place is not its number"
    assert f"### Turn 3: {third['speaker']}" in render_report(made["briefed"])
    debate = client.get(f"/debates/{BRIEFED}").text
    label = re.search(r'id="turn-4".*?<span class="label">([^<]+)</span>', debate, re.S)
    assert label and label[1] == f"turn 3: {third['speaker']}"
    page = text_of(client.get(f"/debates/{BRIEFED}/turns/4").text)
    assert f"Turn 3: {third['speaker']}" in page and "Turn 4" not in page
    assert "4 turns of its perspective, from briefing of turn 1 to briefing of turn 3" in page
    memory = client.get(f"/debates/{BRIEFED}/memory").text
    linked = re.search(rf'href="/debates/{BRIEFED}/turns/4">([^<]+)</a>', memory)
    assert linked and linked[1] == "turn 3"


def test_a_phase_debates_turns_are_named_by_round_and_kind(client: TestClient) -> None:
    page = text_of(client.get("/debates/phases-1/turns/16").text)
    assert "Round 2, critique of architect: testing" in page
    assert "Turn 16" not in page and "round 1, proposal: testing" in page  # a turn it saw
    memory = text_of(client.get("/debates/phases-1/memory").text)
    assert "round 1, proposal architect" in memory and "round 2, refinement testing" in memory


def test_every_count_has_its_separators_and_its_singular() -> None:
    assert counted_number(1, "turn") == "1 turn"
    assert counted_number(0, "turn") == "0 turns"
    assert counted_number(12345, "token") == "12,345 tokens"
    assert counted_number(2, "summary", "summaries") == "2 summaries"


def test_pages_print_counts_with_separators_and_one_turn_singular(client: TestClient) -> None:
    listed = text_of(client.get("/").text)
    assert re.search(r"\d,\d{3} tokens \$", listed) and " tok " not in listed
    figures = text_of(client.get("/debates/phases-1").text)
    assert re.search(r"prompt tokens \d{1,3},\d{3} ", figures)
    critique = text_of(client.get("/debates/phases-1/turns/3").text)  # saw one proposal verbatim
    assert "1 turn of its perspective" in critique and "of a 7,168-token budget" in critique
    memory = text_of(client.get("/debates/phases-1/memory").text)
    assert " / 7,168 " in memory


def test_the_list_is_filtered_by_status_protocol_and_origin(client: TestClient) -> None:
    every = threads(client.get("/").text)
    runs = [t for t in every if t.startswith("compare:")]
    assert len(runs) == 9 and len(every) == 9 + 4
    assert sorted(threads(client.get("/", params={"origin": "comparison"}).text)) == sorted(runs)
    assert threads(client.get("/", params={"origin": "fork"}).text) == ["phases-1-fork"]
    by_hand = threads(client.get("/", params={"origin": "hand"}).text)
    assert sorted(by_hand) == ["briefed", "phases-1", "table-1"]
    tables = threads(client.get("/", params={"protocol": "roundtable", "origin": "hand"}).text)
    assert sorted(tables) == ["briefed", "table-1"]
    samples = threads(client.get("/", params={"protocol": "sample"}).text)
    assert sorted(samples) == sorted(t for t in runs if ":single:" in t or ":vote-3:" in t)
    assert threads(client.get("/", params={"status": "interrupted"}).text) == []
    both = client.get("/", params=[("protocol", "roundtable"), ("protocol", "phases")]).text
    assert "sample" not in threads(both) and len(threads(both)) == 13 - len(samples)
    assert threads(client.get("/", params={"status": "", "origin": ""}).text) == every  # any


def test_the_pager_keeps_the_filters(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "ROWS_PER_PAGE", 2)
    first = client.get("/", params={"origin": "comparison", "q": "result"}).text
    following = re.search(r'href="([^"]+)" rel="next"', first)
    assert following and unescape(following[1]) == "/?q=result&origin=comparison&page=2"
    second = threads(client.get(unescape(following[1])).text)
    assert len(second) == 2 and all(t.startswith("compare:") for t in second)


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("status", "finished", "done, running, waiting for a person, interrupted"),
        ("protocol", "debate", "phases, roundtable, sample"),
        ("origin", "cli", "hand, comparison, fork"),
    ],
)
def test_an_unknown_filter_value_is_refused_naming_the_values_allowed(
    client: TestClient, name: str, value: str, allowed: str
) -> None:
    page = client.get("/", params={name: value})
    assert page.status_code == 400
    shown = text_of(page.text)
    assert f"the filter {name} has no value '{value}'" in shown and allowed in shown


def test_the_comparison_page_shows_what_debate_compare_prints(
    client: TestClient, made: dict[str, Any]
) -> None:
    rows = {
        cells[0]: cells
        for line in made["table"].splitlines()
        if line.startswith("| ") and not line.startswith("| protocol")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    name = re.search(r"Comparison (\w+):", made["table"])
    assert name and set(rows) == {"single", "vote-3", "debate"}
    page = client.get(f"/comparisons/{name[1]}").text
    shown = text_of(page)
    for label in ("single", "debate"):  # McNemar's test against the vote: the CLI's own cell
        assert f"{label} " in shown and rows[label][7] in shown, label
    assert rows["debate"][7] != "-" and f"{rows['debate'][7]} {rows['debate'][9]}" in shown
    assert "vs vote by task (won/lost, p; difference, 95% CI)" in shown
    assert "confidently wrong consensus" in shown and "McNemar's exact test" in shown
    assert "3 tasks × 1 seed: 9 runs stored" in shown
    assert "fake:solve=0.6" in shown and "2: architect, kiss" in shown and "1 round " in shown
    links = re.findall(r'<a class="run (right|wrong)" href="([^"]+)"[^>]*>([^<]+)</a>', page)
    cells = {
        unquote(unescape(href)).removeprefix("/debates/"): (mark, unescape(said))
        for mark, href, said in links
    }
    assert {mark for mark, _ in cells.values()} == {"right", "wrong"}
    # every run the command line scored, with its answer, right or wrong; each cell opens that run's debate
    assert cells == {
        r["thread"]: (
            "right" if r["correct"] else "wrong",
            f"{r['answer']} {'✓' if r['correct'] else '✗'}",
        )
        for r in made["runs"]
    }
    for thread in cells:
        assert client.get(f"/debates/{quote(thread, safe='')}").status_code == 200, thread
