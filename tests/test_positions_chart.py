"""The stance chart: written beside the report, linked from it, a stacked bar per step, a row per agent."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.support.debate_cli import in_process as cli  # the real entry point, in this process

SVG = "{http://www.w3.org/2000/svg}"

AGENTS = ["architect", "kiss", "security"]


def test_a_report_file_gets_its_positions_chart_beside_it_and_links_it(tmp_path: Path) -> None:
    db, report = tmp_path / "d.sqlite", tmp_path / "out" / "debate.md"
    report.parent.mkdir()
    run = cli(
        "run",
        "--model",
        "fake",
        "--agents",
        ",".join(AGENTS),
        "--rounds",
        "2",
        "--no-summary",
        "--db",
        str(db),
        "--thread-id",
        "c",
        "--report",
        str(report),
        "--quiet",
        "Design a cache",
    )
    assert run.returncode == 0, run.stderr
    chart = tmp_path / "out" / "debate.positions.svg"
    assert "![Positions over rounds](debate.positions.svg)" in report.read_text()
    svg = chart.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    ids = [g.get("id") or "" for g in ET.fromstring(svg).iter(f"{SVG}g")]
    columns = {int(i.rsplit("-", 1)[1]) for i in ids if re.fullmatch(r"stance-\d+-at-\d+", i)}
    assert columns == {0, 1, 2}  # proposed, round 1, round 2: a stacked bar each
    legend = [i for i in ids if re.fullmatch(r"stance-\d+", i)]
    assert 1 <= len(legend) <= 7  # nine free-text positions, at most six stances and an other
    assert all(
        re.search(rf"<title>{agent}, proposed", svg) for agent in AGENTS
    )  # hover: who holds what

    again = tmp_path / "again.md"
    assert cli("report", "c", "--db", str(db), "--output", str(again)).returncode == 0
    assert (tmp_path / "again.positions.svg").read_text() == svg


def test_a_report_that_cannot_be_written_exits_6_naming_the_file(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    assert (
        cli(
            "run",
            "--model",
            "fake",
            "--agents",
            "kiss,security",
            "--rounds",
            "1",
            "--no-summary",
            "--db",
            str(db),
            "--thread-id",
            "c",
            "--quiet",
            "p",
        ).returncode
        == 0
    )
    blocked = tmp_path / "r.md"
    (tmp_path / "r.positions.svg").mkdir()  # the chart's name is taken by a folder: its write fails
    result = cli("report", "c", "--db", str(db), "--output", str(blocked))
    assert (
        result.returncode == 6
        and "cannot write" in result.stderr
        and "r.positions.svg" in result.stderr
    )
    assert "Traceback" not in result.stderr
