"""``debate serve`` in a real browser: Debian's Chromium, driven by Selenium, on a real server process.

Each test saves a 1280x800 screenshot under ``build/screenshots/``; the README shows two of them.
The tests run in order on one server and one database: the list is read before anything is added.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import chromium, missing, screenshot, served
from tests.support.debate_cli import background
from tests.support.viewer_debates import FLIPPING, SCRIPT, three_debates

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("browser") / "debates.sqlite"
    three_debates(path)
    return path


@pytest.fixture(scope="module")
def site(db: Path) -> Iterator[str]:
    with served(db) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def until(check: Callable[[], Any], seconds: float = 60, every: float = 0.1) -> Any:
    """Return ``check()``'s first true value, polled; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            found = check()
        except Exception:  # the page is between two loads
            found = None
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"gave up after {seconds} s")


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def status(driver: Any) -> str:
    return str(driver.find_element("css selector", "#live .standing .badge").text)


def test_the_list_shows_three_debates(browser: Any, site: str) -> None:
    browser.get(site + "/")
    rows = css(browser, "table.debates tr.row")
    assert [r.get_attribute("data-thread") for r in rows] == [
        "phases-1-fork",
        "table-1",
        "phases-1",
    ]
    assert "fork of round 2 of phases-1" in rows[0].text and "roundtable" in rows[1].text
    screenshot(browser, "list")


def test_a_finished_debates_grid_verdict_and_memory(browser: Any, site: str) -> None:
    browser.get(site + "/debates/phases-1")
    assert len(css(browser, "table.grid tbody tr")) == 3
    turn = css(browser, "table.grid details.turn")[0]
    turn.find_element("css selector", "summary").click()
    assert (
        turn.get_attribute("open") is not None
        and turn.find_element("css selector", ".text").is_displayed()
    )
    verdict = browser.find_element("css selector", "section.verdict").text
    assert "47" in verdict and "3 of 3 agents" in verdict
    screenshot(browser, "debate")
    browser.find_element("link text", "memory").click()
    until(lambda: "What each turn's speaker saw" in browser.page_source)
    css(browser, "table.num-table td a")[-2].click()  # the last refinement: a long perspective
    until(lambda: css(browser, ".strip span"))
    assert "None was left out." in browser.page_source
    screenshot(browser, "memory")


def test_a_running_debate_shows_new_turns_without_a_reload(
    browser: Any, site: str, db: Path, tmp_path: Path
) -> None:
    run = (
        "run",
        "--model",
        "fake:latency_ms=300",
        "--rounds",
        "2",
        "--agents",
        "kiss,testing",
        "--thread-id",
        "live-1",
    )
    with background(*run, "--db", str(db), "Pick a lock manager", log=tmp_path / "run.err"):
        until(
            lambda: (
                browser.get(site + "/debates/live-1")
                or "Pick a lock manager" in browser.page_source
            )
        )
        browser.execute_script("window.__sameLoad = 42")
        first = len(css(browser, "#live details.turn"))
        until(lambda: len(css(browser, "#live details.turn")) > first)
        assert (
            browser.execute_script("return window.__sameLoad") == 42
        )  # updated in place, never reloaded
        screenshot(browser, "live")
        until(lambda: status(browser) == "done", seconds=90)
        assert browser.execute_script("return window.__sameLoad") == 42
        assert "Verdict" in browser.find_element("id", "live").text


def test_answering_a_seated_persons_question_finishes_the_debate(browser: Any, site: str) -> None:
    browser.get(site + "/new?protocol=roundtable")  # the form shows the roundtable's own fields
    fields = {
        "problem": "Pick a cache",
        "thread_id": "with-alice",
        "model": "fake",
        "agents": "architect,security",
        "humans": "alice",
        "turns": "3",
    }
    for name, value in fields.items():
        browser.find_element("id", name).send_keys(value)
    browser.find_element("css selector", ".start-form button.primary").click()
    box = until(lambda: css(browser, "section.questions textarea"))[0]
    assert (
        "human:alice, your turn" in browser.find_element("css selector", "section.questions").text
    )
    box.send_keys(SCRIPT)
    screenshot(browser, "person")
    browser.find_element("css selector", ".answer-form button").click()
    until(lambda: status(browser) == "done")
    assert SCRIPT in browser.find_element("id", "live").get_attribute("textContent")  # as text
    assert browser.execute_script("return window.pwned") is None  # and never run


def test_a_fork_from_round_2_appears_in_the_list_and_shows_the_flip(
    browser: Any, site: str
) -> None:
    browser.get(site + "/debates/phases-1")
    form = browser.find_element("css selector", "form.fork-form")
    rounds = form.find_element("name", "round")
    rounds.clear()
    rounds.send_keys("2")
    form.find_element("name", "model").send_keys(FLIPPING[1])
    form.find_element("name", "agents").send_keys(FLIPPING[3])
    form.find_element("css selector", "button").click()
    until(lambda: "-fork-r2-" in browser.current_url)
    fork = browser.current_url.rsplit("/", 1)[1]
    until(lambda: status(browser) == "done")
    browser.refresh()
    tree = browser.find_element("css selector", "section.fork-tree").text
    assert "flipped" in tree and "46" in tree and "47" in tree
    browser.execute_script("document.querySelector('section.fork-tree').scrollIntoView()")
    screenshot(browser, "fork")
    browser.get(site + "/")
    assert fork in [r.get_attribute("data-thread") for r in css(browser, "tr.row")]


def test_a_script_in_model_text_renders_as_text(browser: Any, site: str) -> None:
    browser.get(site + "/debates/phases-1")
    assert SCRIPT in browser.find_element("css selector", ".problem").text
    assert browser.execute_script("return window.pwned") is None
    assert not css(browser, "main img[src=x]")
    screenshot(browser, "escaped")


def test_an_unknown_debate_is_a_404_page_that_leads_back(browser: Any, site: str) -> None:
    browser.get(site + "/debates/no-such-debate")
    assert "Not found" in browser.find_element("tag name", "h1").text
    assert "no-such-debate" in browser.find_element("css selector", ".message").text
    screenshot(browser, "not-found")
    browser.find_element("link text", "Back to the list of debates").click()
    until(lambda: css(browser, "table.debates"))


REBOUND = "rebind.example"
"""A foreign name the browser resolves to 127.0.0.1, as a DNS-rebinding site makes its own name do."""
START_FROM_THE_PAGE = """
const [thread, done] = arguments;
fetch('/new')
  .then((page) => page.text())
  .then((page) => {
    const csrf = (page.match(/name="csrf" value="([^"]+)"/) || ['', ''])[1];
    const fields = {csrf, problem: 'Pick a queue', model: 'fake', rounds: '1', thread_id: thread};
    return fetch('/new', {method: 'POST', body: new URLSearchParams(fields)});
  })
  .then((sent) => done(sent.status), (failed) => done(String(failed)));
"""
"""What a rebinding page's script does: read the start form's token, then start a debate with it."""


def test_a_page_under_a_rebound_name_is_refused_and_starts_nothing(browser: Any, site: str) -> None:
    port = site.rsplit(":", 1)[1]
    with chromium(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1") as rebound:
        rebound.get(f"http://{REBOUND}:{port}/")
        shown = rebound.find_element("tag name", "body").text
        assert "DNS rebinding" in shown and not css(rebound, "table.debates"), shown
        screenshot(rebound, "rebinding-refused")
        assert rebound.execute_async_script(START_FROM_THE_PAGE, "rebound-1") == 403
    browser.get(site + "/")
    assert "rebound-1" not in [r.get_attribute("data-thread") for r in css(browser, "tr.row")]


def test_a_finished_debate_opens_with_its_verdict_on_the_first_screen(
    browser: Any, site: str
) -> None:
    browser.get(site + "/debates/phases-1")
    decision = browser.find_element("css selector", "section.verdict")
    first_round = browser.find_element("id", "round-1")
    assert decision.rect["y"] < first_round.rect["y"]
    viewport = browser.execute_script("return window.innerHeight")
    assert decision.rect["y"] + decision.rect["height"] <= viewport, (
        "the decision needs no scrolling"
    )
    shown = decision.text
    assert "47" in shown and "The answer is 47." in shown and "3 of 3 agents" in shown
    assert "ran every round it was given: 3 rounds" in shown and "model calls" in shown
    screenshot(browser, "verdict-first")
