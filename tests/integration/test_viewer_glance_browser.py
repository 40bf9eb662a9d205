"""A shared debate file and the list's filters in a real browser: Debian's Chromium, driven by Selenium.

The shared file is opened from disk (``file://``), as the person it was sent to opens it: it must read whole
with no server, run nothing (a planted ``<script>`` shows as text) and fetch nothing. The filters are chosen
in the form of a real ``debate serve``. Screenshots: ``build/screenshots/shared-debate.png`` and
``list-filtered.png``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import chromium, missing, screenshot, served
from tests.support.debate_cli import in_process
from tests.support.viewer_debates import SCRIPT, three_debates
from tests.test_viewer_glance import BRIEFED, briefed_roundtable

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glance-browser") / "debates.sqlite"
    three_debates(path)
    briefed_roundtable(path)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def test_a_shared_file_reads_whole_from_disk_runs_nothing_and_fetches_nothing(
    browser: Any, db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "shared.html"
    done = in_process("report", BRIEFED, "--db", str(db), "--html", str(target))
    assert done.returncode == 0, done.stderr
    browser.get(target.as_uri())
    assert browser.execute_script("return window.pwned") is None
    problem = browser.find_element("css selector", ".problem").text
    assert SCRIPT.split("<img")[0] in problem  # the planted script, shown as its text
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    chart = browser.find_element("css selector", "img.chart")
    assert browser.execute_script("return arguments[0].naturalWidth", chart) > 0
    assert (
        browser.execute_script(
            "return getComputedStyle(document.querySelector('section.verdict')).borderTopStyle"
        )
        == "solid"
    )  # the inline style sheet applies
    briefing = browser.find_element("css selector", "details.briefing")
    briefing.find_element("css selector", "summary").click()  # opens with no script
    assert briefing.get_attribute("open") is not None and SCRIPT.split("<img")[0] in briefing.text
    assert browser.execute_script("return window.pwned") is None
    browser.execute_script("window.scrollTo(0, 0)")
    screenshot(browser, "shared-debate")


def test_the_lists_filters_are_chosen_in_its_form_and_kept(browser: Any, db: Path) -> None:
    with served(db) as url:
        browser.get(f"{url}/")
        rows = browser.find_elements("css selector", "tr.row")
        assert len(rows) == 4
        for name, value in (("origin", "hand"), ("protocol", "roundtable")):
            browser.find_element(
                "css selector", f'select[name="{name}"] option[value="{value}"]'
            ).click()
        browser.find_element("css selector", ".search button").click()
        deadline = time.monotonic() + 30  # the form's GET navigates: read the address once it has
        while "origin=" not in browser.current_url and time.monotonic() < deadline:
            time.sleep(0.05)
        query = parse_qs(urlsplit(browser.current_url).query)
        assert query["origin"] == ["hand"] and query["protocol"] == ["roundtable"]
        shown = [
            r.get_attribute("data-thread") for r in browser.find_elements("css selector", "tr.row")
        ]
        assert sorted(shown) == ["briefed", "table-1"]
        chosen = browser.find_element("css selector", 'select[name="origin"] option:checked')
        assert chosen.get_attribute("value") == "hand"
        screenshot(browser, "list-filtered")
