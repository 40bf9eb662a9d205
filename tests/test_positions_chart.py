"""The positions chart: written beside the report, linked from it, one line per agent, one point per position."""

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
    groups = {g.get("id"): g for g in ET.fromstring(svg).iter(f"{SVG}g")}
    lines = [gid for gid in groups if re.fullmatch(r"agent-\d+-line", gid or "")]
    assert len(lines) == len(AGENTS)
    points = [
        mark
        for gid, group in groups.items()
        if re.fullmatch(r"agent-\d+-points", gid or "")
        for mark in group.iter()
        if mark.tag in (f"{SVG}use", f"{SVG}path") and mark.find(f"{SVG}title") is not None
    ]
    assert len(points) == len(AGENTS) * 3  # proposed, r1, r2: each point drawn, titled for hover
    assert all(f"<title>{agent}</title>" in svg for agent in AGENTS)

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
