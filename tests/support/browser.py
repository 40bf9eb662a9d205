"""A real browser on a real ``debate serve``: Debian's Chromium driven by Selenium, nothing downloaded.

The driver is Debian's ``chromium-driver`` at a fixed path and the browser its
``chromium``: Selenium Manager is never asked to find (or fetch) either. The
viewport is pinned to 1280x800 so every screenshot has that size.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.support.debate_cli import cli_env, debate_command

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1280, 800
OPTIONS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    f"--window-size={WIDTH},{HEIGHT}",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots"


def missing() -> str | None:
    """Return why no browser can run here (the packages to install), or None."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return "Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
    return None


@contextmanager
def chromium(*extra: str) -> Iterator[Any]:
    """Yield a headless Chromium with a 1280x800 viewport (and the ``extra`` switches), quit afterwards."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for option in (*OPTIONS, *extra):
        options.add_argument(option)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, name: str) -> Path:
    """Save the viewport as ``build/screenshots/NAME.png`` (a test artifact) and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


@contextmanager
def served(db: Path, *extra: str) -> Iterator[str]:
    """Run ``debate serve`` on a free loopback port as a real process; yield its URL; stop it with Ctrl-C."""
    server = subprocess.Popen(
        [*debate_command(), "serve", "--db", str(db), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith(("debate serve: http://", "debate serve: https://")), line + (
            server.stderr.read() if server.stderr else ""
        )
        yield line.split()[2].rstrip("/")
    finally:
        server.send_signal(2)
        try:
            server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def first_paint(driver: Any, wait_s: float = 5.0) -> float | None:
    """Return the page's first contentful paint in milliseconds, as the browser measured it.

    The entry is recorded a frame or two after the page loads: it is polled for.
    """
    deadline = time.monotonic() + wait_s
    while True:
        found = driver.execute_script(
            "return performance.getEntriesByName('first-contentful-paint').map(e => e.startTime)"
        )
        if found or time.monotonic() > deadline:
            return float(found[0]) if found else None
        time.sleep(0.05)


def has_browser() -> bool:
    """Return True when the Debian browser and driver are installed."""
    return missing() is None and shutil.which(CHROMEDRIVER) is not None


def start_from_form(driver: Any, site: str, thread: str, model: str, problem: str) -> float:
    """Start a one-round debate of kiss and testing from the start form and wait for its page; return when the
    form was sent (seconds since the epoch): this server then runs the debate."""
    driver.get(site + "/new")
    fields = {"problem": problem, "model": model, "agents": "kiss,testing", "rounds": "1"}
    for name, value in {**fields, "thread_id": thread}.items():
        driver.find_element("id", name).send_keys(value)
    sent = time.time()
    driver.find_element("css selector", ".start-form button.primary").click()
    deadline = time.monotonic() + 300
    while not driver.current_url.endswith(f"/debates/{thread}"):
        assert time.monotonic() < deadline, "the debate's page never opened"
        time.sleep(0.02)
    return sent
