"""In Debian's Chromium: a debate this server runs shows each agent's reply as it is written, without a reload.

The page's script polls the debate's small state record, which carries what the run's calls have written so far;
each draft grows in place (as text) and gives way to the landed reply when its call ends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_viewer_stop_browser import text, until
from tests.support.browser import chromium, missing, screenshot, served, start_from_form
from tests.support.viewer_debates import SCRIPT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]
PROBLEM = "Pick a session cache"
DRAFTS = "return Array.from(document.querySelectorAll('#drafts [data-draft] .text')).map(e => e.textContent)"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    with served(tmp_path / "debates.sqlite") as url:
        yield url


def test_a_reply_grows_on_the_page_as_it_is_written_then_lands(site: str) -> None:
    with chromium() as browser:
        start_from_form(browser, site, "drafted", "fake:latency_ms=6000,words=150", PROBLEM)
        browser.execute_script("window.__sameLoad = true")
        lengths: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(set(lengths)) < 3:
            drafts: Any = browser.execute_script(DRAFTS)
            if drafts:
                lengths.append(max(len(d) for d in drafts))
            time.sleep(0.1)
        assert len(set(lengths)) >= 3 and lengths == sorted(lengths), lengths
        assert "being written" in text(browser)
        screenshot(browser, "drafts")
        assert browser.execute_script(
            "return window.__sameLoad === true"
        )  # drawn in place, not reloaded
        until(lambda: "proposal by kiss, landed" in text(browser) or "critique" in text(browser))
        until(lambda: "Verdict" in text(browser), seconds=120)
        assert browser.execute_script(DRAFTS) == []


PLANT = """
const planted = arguments[0];
const real = window.fetch;
window.fetch = (url, options) => String(url).endsWith('/state')
  ? real(url, options).then(r => r.json()).then(now => {
      now.drafts = [{task: 'x"] body, [data-draft="', who: 'kiss', kind: 'proposal <b>', text: planted, done: false}];
      return new Response(JSON.stringify(now), {status: 200, headers: {'Content-Type': 'application/json'}});
    })
  : real(url, options);
"""


def test_a_draft_holding_markup_is_drawn_as_text_by_the_pages_script(site: str) -> None:
    """The state record is answered with a planted draft (markup in its text, kind and task id): the script must
    draw it as text and never run it."""
    with chromium() as browser:
        start_from_form(browser, site, "planted", "fake:latency_ms=60000", PROBLEM)
        until(lambda: "At work" in text(browser))
        browser.execute_script(PLANT, SCRIPT)
        shown = until(lambda: browser.execute_script(DRAFTS))
        assert shown == [SCRIPT]
        assert browser.execute_script("return window.pwned") is None
        assert browser.find_elements("css selector", "#drafts img, #drafts script, #drafts b") == []
        assert "proposal <b> by kiss, being written" in text(browser)
        browser.find_element("css selector", ".stop-form button").click()
        until(lambda: "Resume this debate" in text(browser))
