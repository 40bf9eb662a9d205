"""``debate serve`` in a real browser: first paint of big pages, and how soon a live page shows a new turn.

First paint is the browser's own ``first-contentful-paint`` in Debian's headless
Chromium, on a ``debate serve`` process over SQLite:

- a roundtable of 10,000 turns against one of 10 turns (the turns are paged);
- a list of 1,000 debates against one of 3 (the list is paged);

each cold (the server's first read of that database or debate, in a browser
that has already loaded another page) and warm (the same page again). The big stores hold real states: a real roundtable whose
log is extended by ``update_state`` (as its last node, so nothing runs again), in batches, to 10,000
turns; a real debate's checkpoints copied under 1,000 thread ids. The live
page's update delay is each turn's appearance in the open page (a mutation
observer's clock) minus the time its record was made in the process running
the debate (``created_at``), on the same machine. A debate started from the
page (so the server runs it and streams its calls) is timed from its form's
sending to the first words of a reply on the page and to the first whole reply:
their ratio is what streaming saves a reader. Nothing asserts on time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sqlite3
import time
from pathlib import Path
from statistics import median
from typing import Any

from bench.common import sqlite_saver, table, x
from debate_engine.app.cli.main import main as debate_cli
from debate_engine.graph.builder import compile_debate
from tests.support.browser import chromium, first_paint, missing, served, start_from_form
from tests.support.debate_cli import background
from tests.support.viewer_debates import long_roundtable

BATCH = 500
"""Turns written per ``update_state``: one checkpoint each, as a long run's log grows."""
OBSERVER = """
window.__seen = {};
const mark = () => document.querySelectorAll('#live [data-seq]').forEach(e => {
  if (!(e.dataset.seq in window.__seen)) window.__seen[e.dataset.seq] = Date.now();
});
mark();
new MutationObserver(mark).observe(document.getElementById('live'), {childList: true, subtree: true});
"""


def roundtable(path: Path, turns: int) -> None:
    """Store a roundtable of ``turns`` turns: a real 3-turn run, its log extended in batches."""
    long_roundtable(path, turns, model="fake:words=60", problem="Pick a cache", batch=BATCH)


def cli(*argv: str) -> None:
    """Run one ``debate`` command in-process, its solution (stdout) dropped."""
    with contextlib.redirect_stdout(io.StringIO()):
        debate_cli([*argv, "--quiet"])


def many(path: Path, count: int) -> None:
    """Store ``count`` debates: one real short debate, its checkpoints and writes copied under new thread ids."""
    cli(
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--agents",
        "kiss,testing",
        "--db",
        str(path),
        "--thread-id",
        "d-0",
        "Pick a queue",
    )
    with sqlite3.connect(path) as conn:
        for n in range(1, count):
            for name in ("checkpoints", "writes"):
                columns = [r[1] for r in conn.execute(f"PRAGMA table_info({name})")]
                rest = ", ".join(c for c in columns if c != "thread_id")
                conn.execute(
                    f"INSERT INTO {name} (thread_id, {rest}) SELECT ?, {rest} FROM {name} WHERE thread_id = 'd-0'",
                    (f"d-{n}",),
                )


def paints(db: Path, url: str, repeats: int = 3) -> tuple[float, float]:
    """Return the first paint of ``url`` on a fresh server: the first load, and the median of the next ones."""
    with served(db) as site, chromium() as driver:
        driver.get(site + "/new")  # the browser's own start, on a page that reads no debate
        driver.get(site + url)
        cold = first_paint(driver) or float("nan")
        assert 'class="error"' not in driver.page_source, f"{url} on {db.name} is an error page"
        warm = []
        for _ in range(repeats):
            driver.get(site + url)
            warm.append(first_paint(driver) or float("nan"))
    return cold, median(warm)


def live_delays(folder: Path) -> list[float]:
    """Return, per turn, milliseconds from its record being made to its showing in an open page."""
    db = folder / "live.sqlite"
    run = (
        "run",
        "--model",
        "fake:latency_ms=300",
        "--rounds",
        "3",
        "--agents",
        "kiss,testing",
        "--thread-id",
        "live",
        "--db",
        str(db),
        "Pick a lock",
    )
    cli(
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--db",
        str(db),
        "--thread-id",
        "first",
        "x",
    )
    with (
        served(db) as site,
        chromium() as driver,
        background(*run, log=folder / "live.err") as process,
    ):
        while "Pick a lock" not in driver.page_source:
            time.sleep(0.05)
            driver.get(site + "/debates/live")
        driver.execute_script(OBSERVER)
        process.wait(timeout=300)
        time.sleep(2)
        seen = driver.execute_script("return window.__seen")
    values = _stored(db, "live")
    made = {str(t["seq"]): t["created_at"] for t in values["transcript"]}
    return [
        seen[seq] - made[seq] * 1000
        for seq in seen
        if seq in made and int(seq) >= _first_unseen(seen)
    ]


DRAFTED = """
window.__drafted = null; window.__landed = null;
const look = () => {
  if (window.__drafted === null && [...document.querySelectorAll('#drafts [data-draft] .text')]
      .some(e => e.textContent)) window.__drafted = Date.now();
  if (window.__landed === null && document.querySelector('#live [data-task], #live [data-seq]'))
    window.__landed = Date.now();
};
look();
new MutationObserver(look).observe(document.body, {childList: true, subtree: true, characterData: true});
"""
DRAFT_MODEL = "fake:latency_ms=4000,words=150"
EMBEDDED = "local:smollm2"
"""Timed too where it is installed (``make install-local``): a real model's first words."""


def draft_delays(folder: Path, model: str = DRAFT_MODEL) -> tuple[float, float] | None:
    """Return milliseconds from a debate's start (its form sent) to its first words and to its first reply shown.

    The debate is started from the page, so this server runs it and streams its calls' text.
    """
    with served(folder / f"drafts-{model.split(':')[0]}.sqlite") as site, chromium() as driver:
        sent = start_from_form(driver, site, "drafted", model, "Pick a lock") * 1000
        deadline = time.monotonic() + 300
        driver.execute_script(DRAFTED)
        while time.monotonic() < deadline:
            drafted, landed = driver.execute_script("return [window.__drafted, window.__landed]")
            if drafted and landed:
                return drafted - sent, landed - sent
            time.sleep(0.05)
    return None


def _first_unseen(seen: dict[str, float]) -> int:
    """Return the first turn that appeared after the page was opened (those before were there at load)."""
    first = min(seen.values())
    later = [int(s) for s, at in seen.items() if at > first]
    return min(later) if later else 1 << 30


def _stored(db: Path, thread: str) -> dict[str, Any]:
    with sqlite_saver(db) as saver:
        return dict(
            compile_debate(checkpointer=saver)
            .get_state({"configurable": {"thread_id": thread}})
            .values
        )


def bench_viewer(folder: Path, quick: bool = False) -> None:
    """Print first paint of the big pages against small ones, and the live page's update delay."""
    if missing():
        print(f"(skipped: {missing()})\n")
        return
    turns, debates = (1_000, 100) if quick else (10_000, 1_000)
    began = time.perf_counter()
    roundtable(folder / "rt-big.sqlite", turns)
    roundtable(folder / "rt-small.sqlite", 10)
    many(folder / "list-big.sqlite", debates)
    many(folder / "list-small.sqlite", 3)
    print(f"(stores built in {time.perf_counter() - began:.0f} s)\n")
    rows = []
    for what, big, small, url in (
        (f"roundtable page, {turns:,} turns vs 10", "rt-big", "rt-small", "/debates/rt"),
        (f"list, {debates:,} debates vs 3", "list-big", "list-small", "/"),
    ):
        big_cold, big_warm = paints(folder / f"{big}.sqlite", url)
        small_cold, small_warm = paints(folder / f"{small}.sqlite", url)
        rows.append(
            [what, "cold", f"{big_cold:.0f}", f"{small_cold:.0f}", x(big_cold / small_cold)]
        )
        rows.append(
            [what, "warm", f"{big_warm:.0f}", f"{small_warm:.0f}", x(big_warm / small_warm)]
        )
    table(["page", "load", "first paint, big (ms)", "small (ms)", "big / small"], rows)
    delays = sorted(live_delays(folder))
    if delays:
        table(
            ["live page: turn made -> shown", "turns", "median (ms)", "max (ms)"],
            [
                [
                    "fake:latency_ms=300, 2 agents x 3 rounds",
                    len(delays),
                    f"{median(delays):.0f}",
                    f"{delays[-1]:.0f}",
                ]
            ],
        )
    models = [DRAFT_MODEL] + ([EMBEDDED] if importlib.util.find_spec("llama_cpp") else [])
    shown = [(m, found) for m in models if (found := draft_delays(folder, m))]
    if shown:
        table(
            [
                "a run of this server: start -> shown",
                "first words (ms)",
                "first reply (ms)",
                "words / reply",
            ],
            [[m, f"{d:.0f}", f"{landed:.0f}", x(d / landed)] for m, (d, landed) in shown],
        )
