"""The stance chart of a 1,000-turn roundtable in a real browser: Debian's Chromium on a real ``debate serve``.

The roundtable is a real 3-turn run on the fake model whose log is extended by ``update_state``
(as its last node, so nothing runs again) to 1,000 turns, as ``bench/viewer.py`` builds its big
store. Its positions are free text as models write them: four plans, each worded a new way every
time (numbers and phrasing change), and every tenth turn an idea of its own. The page must stay
as wide as the window, the chart's legend must name at most six stances and an ``other``, and
the screenshot ``build/screenshots/stances-roundtable.png`` shows the chart.
"""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import WIDTH, chromium, missing, screenshot, served
from tests.support.viewer_debates import long_roundtable

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]

TURNS = 1000
BATCH = 250
"""Turns written per ``update_state``: one checkpoint each, as a long run's log grows."""
PLANS = [
    "Use Redis as a write-through cache with a {n} minute TTL",
    "Shard the cache by tenant id across {n} nodes",
    "Keep an in-process LRU cache of {n} MB per worker",
    "Do not cache sessions; read them from PostgreSQL with an index on {n} columns",
]
SVG = "{http://www.w3.org/2000/svg}"
IDEAS = ["gossip", "quorum", "lease", "bloom", "raft", "crdt", "ttl", "paxos", "vector", "clock"]


def stated(turn: int, rnd: random.Random) -> dict[str, Any]:
    """Return turn ``turn``'s position: a plan worded anew, or (every tenth turn) an idea of its own."""
    if turn % 10 == 0:
        words = " ".join(rnd.sample(IDEAS, 4))
        text = f"Idea {turn}: {words} {rnd.randint(1, 10_000)}"
    else:
        drift = min(1.0, turn / TURNS)  # the agents drift toward the first plan
        plan = 0 if rnd.random() < 0.25 + 0.5 * drift else rnd.randrange(1, len(PLANS))
        text = PLANS[plan].format(n=rnd.randint(2, 90))
    return {"position": text, "reason": "it fits", "confidence": rnd.randint(40, 95), "answer": ""}


def roundtable(path: Path) -> None:
    """Store a roundtable of ``TURNS`` turns: a real 3-turn run, its log extended in batches."""
    rnd = random.Random(41)
    long_roundtable(path, TURNS, batch=BATCH, position=lambda seq: stated(seq, rnd))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("stances") / "debates.sqlite"
    roundtable(db)
    with served(db) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


SVG_OF_THE_CHART = """
const done = arguments[arguments.length - 1];
fetch(document.querySelector('section.positions img.chart').src)
  .then(r => r.text()).then(done, e => done('failed: ' + e));
"""


def test_a_1000_turn_roundtables_stance_chart_fits_the_window(browser: Any, site: str) -> None:
    browser.get(site + "/debates/rt?page=20")
    chart = browser.find_element("css selector", "section.positions img.chart")
    browser.execute_script("document.querySelector('section.positions').scrollIntoView()")
    browser.set_script_timeout(60)
    loaded = browser.execute_async_script(
        "const img = arguments[0], done = arguments[1];"
        "if (img.complete) done(img.naturalWidth); else img.onload = () => done(img.naturalWidth);",
        chart,
    )
    assert loaded > 0, "the chart did not load"
    screenshot(browser, "stances-roundtable")
    wide = browser.execute_script("return document.documentElement.scrollWidth")
    assert wide <= WIDTH, f"the page is {wide} px wide in a {WIDTH} px window"
    table = browser.find_element("css selector", "table.positions-table")
    assert table.size["width"] <= WIDTH, f"the positions table is {table.size['width']} px wide"
    assert chart.size["width"] <= WIDTH

    svg = browser.execute_async_script(SVG_OF_THE_CHART)
    assert svg.startswith("<svg"), svg[:200]
    legend = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("id") == "legend_1")
    entries = [g for g in legend.iter(f"{SVG}g") if re.fullmatch(r"stance-\d+", g.get("id") or "")]
    texts = [" ".join(" ".join(g.itertext()).split()) for g in entries]
    assert 1 <= len(entries) <= 7, texts  # six stances and an other at most
    assert any(t.startswith("other (") for t in texts), texts  # 100 ideas of their own, folded
    assert any(t.startswith("Use Redis") for t in texts), texts  # a plan, worded many ways, is one


def test_the_page_says_who_agrees_with_whom_on_each_turn_shown(browser: Any, site: str) -> None:
    browser.get(site + "/debates/rt?page=20")
    rows = browser.find_elements("css selector", "table.positions-table tbody tr")
    assert 1 <= len(rows) <= 50  # the turns of the page shown, never all 1,000
    heads = browser.find_elements("css selector", "table.positions-table thead th")
    assert [h.get_attribute("textContent") for h in heads] == [
        "turn",
        "who agrees with whom",
        "architect",
        "security",
        "kiss",
    ]
    agreeing = rows[-1].find_element("css selector", "td.agreeing").text
    assert all(agent in agreeing for agent in ("architect", "security", "kiss")), agreeing
