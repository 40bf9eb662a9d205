"""A comparison's page, read back from its runs in the database: the same figures ``debate compare`` prints."""

from __future__ import annotations

import contextlib
import io
import re
from html import unescape
from pathlib import Path

from starlette.testclient import TestClient

from debate_engine.app.cli.main import main
from debate_engine.app.viewer import create_app
from debate_engine.app.viewer.comparison_view import parse_thread, protocol_name


def test_a_comparison_shows_accuracy_intervals_flips_and_spend(tmp_path: Path) -> None:
    db = tmp_path / "compare.sqlite"
    argv = ["compare", "builtin:arithmetic:3", "--protocols", "single,vote,debate"]
    argv += ["--model", "fake:solve=0.6", "--rounds", "1", "--agents", "architect,kiss"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*argv, "--db", str(db), "--quiet"]) == 0
    single = re.search(r"\| single \| ([\d.]+) \(([\d.]+)-([\d.]+)\), (\d)/3", printed.getvalue())
    assert single
    with TestClient(create_app(str(db))) as client:
        listed = client.get("/").text
        name = re.findall(r'href="/comparisons/([^"]+)"', listed)[0]
        page = client.get(f"/comparisons/{name}")
        chart = client.get(f"/comparisons/{name}/accuracy.svg")
    shown = " ".join(unescape(re.sub(r"<[^>]+>", " ", page.text)).split())
    accuracy, low, high = (f"{100 * float(v):.1f}" for v in single.groups()[:3])
    assert f"single 3 {single[4]} {accuracy}% {low}–{high}%" in shown
    assert "Flips" in shown and "wrong to right" in shown and "9 runs stored" in shown
    assert chart.status_code == 200 and chart.headers["content-type"].startswith("image/svg+xml")


def test_a_runs_thread_names_its_protocol_task_and_seed() -> None:
    assert parse_thread("abc", "compare:abc:vote-5:arithmetic-2:0") == ("vote-5", "arithmetic-2", 0)
    assert parse_thread("abc", "compare:other:vote-5:arithmetic-2:0") is None
    assert parse_thread("abc", "debate-1") is None
    assert protocol_name("vote-5") == "vote" and protocol_name("roundtable-12") == "roundtable"
    assert protocol_name("debate-vote") == "debate-vote"
