"""A person answering in two tabs of Debian's Chromium, on a real ``debate serve``: the old tab's form never
passes the questions the debate asks next, and the words it sent are shown back.

Screenshots go to ``build/screenshots/`` (``answer-form``: a turn with its position fields;
``answer-stale``: the old tab's form refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_viewer_browser import css, until
from tests.support.browser import chromium, missing, screenshot, served
from tests.test_viewer_answers import ALICE, alices, questions, start, transcript

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]


def section(driver: Any) -> str:
    return str(driver.find_element("css selector", "section.questions").text)


def test_an_old_tabs_form_is_refused_and_its_words_are_shown_back(tmp_path: Path) -> None:
    db = tmp_path / "debates.sqlite"
    with served(db) as site, chromium() as browser:
        start(site, "tabs")
        ((task, _),) = questions(site, "tabs")
        browser.get(site + "/debates/tabs")
        first = browser.current_window_handle
        screenshot(browser, "answer-form")
        browser.switch_to.new_window("tab")
        browser.get(site + "/debates/tabs")
        second = browser.current_window_handle
        css(browser, "section.questions textarea")[0].send_keys("Typed in the second tab")

        browser.switch_to.window(first)
        css(browser, "section.questions textarea")[0].send_keys("Sent from the first tab")
        css(browser, ".answer-form button.primary")[0].click()
        until(lambda: len(questions(site, "tabs")) == 2)  # the debate asks alice's critiques

        browser.switch_to.window(second)
        box = css(browser, "section.questions textarea")[0]
        assert box.get_attribute("value") == "Typed in the second tab"  # nothing typed is lost
        assert task in section(browser)  # the tab still shows the proposal's question
        css(browser, ".answer-form button.primary")[0].click()
        shown = until(lambda: "Nothing was recorded" in section(browser) and section(browser))
        assert "your turn: Critique kiss's proposal" in shown
        assert "your turn: Critique testing's proposal" in shown
        assert "Typed in the second tab" in browser.find_element("css selector", ".unsent").text
        screenshot(browser, "answer-stale")
        assert [t["content"] for t in alices(db, "tabs", "proposal")] == ["Sent from the first tab"]
        assert not alices(db, "tabs", "critique")  # the critiques still wait: none was passed
    assert "(passed)" not in [t["content"] for t in transcript(db, "tabs") if t["speaker"] == ALICE]
