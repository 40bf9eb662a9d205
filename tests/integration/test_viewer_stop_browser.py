"""In Debian's Chromium with scripts off: choose a protocol, start, stop and resume a debate from its pages alone.

The forms must work without the page's script (no fetch, no live update): the protocol's settings come
with a button, and a stop or a resume is a plain form the browser posts with its own ``Origin``, which the
server's guard must take as the viewer's own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import chromium, missing, screenshot, served

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    with served(tmp_path / "debates.sqlite") as url:
        yield url


def ids(driver: Any) -> set[str]:
    return {e.get_attribute("id") for e in driver.find_elements("css selector", "[id]")}


def text(driver: Any) -> str:
    return str(driver.find_element("tag name", "main").text)


def until(check: Any, seconds: float = 60) -> Any:
    """Return ``check()``'s first true value (the page may be between two loads); fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            found = check()
        except Exception:  # the page is between two loads
            found = None
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"gave up after {seconds} s")


def reloaded_until(driver: Any, wanted: str, seconds: float = 90) -> None:
    """Reload the page (no script updates it) until it shows ``wanted``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            shown = text(driver)
        except (
            Exception
        ):  # the page is between two loads: its nodes left the document as they were read
            shown = ""
        if wanted in shown:
            return
        assert time.monotonic() < deadline, shown[:800]
        time.sleep(0.3)
        driver.refresh()


def test_a_debate_is_started_stopped_and_resumed_without_scripts(site: str) -> None:
    with chromium("--blink-settings=scriptEnabled=false") as browser:
        browser.get(site + "/new")
        assert "rounds" in ids(browser) and "turns" not in ids(browser)
        browser.find_element("id", "problem").send_keys("Pick a session cache")
        browser.find_element("css selector", "#protocol option[value=roundtable]").click()
        browser.find_element("css selector", "button.show-fields").click()
        until(lambda: "turns" in ids(browser))
        assert "order" in ids(browser) and "rounds" not in ids(browser)
        assert (
            browser.find_element("id", "problem").get_attribute("value") == "Pick a session cache"
        )
        for name, value in (
            ("model", "fake:latency_ms=1000"),
            ("agents", "kiss,testing"),
            ("turns", "6"),
            ("thread_id", "no-script"),
        ):
            browser.find_element("id", name).send_keys(value)
        browser.find_element("css selector", ".start-form button.primary").click()
        until(lambda: browser.current_url.endswith("/debates/no-script"))
        assert "Working now" in text(browser) and "At work:" in text(browser)
        browser.find_element("css selector", ".stop-form button").click()
        until(lambda: "Resume this debate" in text(browser))
        assert "interrupted" in text(browser) and "Stop this debate" not in text(browser)
        assert "stopped from this page" in text(browser)
        screenshot(browser, "stopped")
        browser.find_element("xpath", "//button[contains(., 'Resume this debate')]").click()
        reloaded_until(browser, "Verdict")
        assert "Stop this debate" not in text(browser)
