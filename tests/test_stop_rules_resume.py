"""A debate under a judged stop rule, killed mid-way, resumes with its positions, its rule and its checks.

The kill needs a process of its own: an integration test (``make test``). The uninterrupted run and the resume
go through the entry point in this process.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.debate_cli import in_process
from tests.test_resume import stop_after

AGENTS = ["architect", "performance", "security"]
FIRST_ROUND = 3 + 6 + 3
"""Proposals, critiques and refinements of round 1: the judge's check comes next."""

pytestmark = pytest.mark.integration


def run_args(tmp_path: Path) -> list[str]:
    config = (
        tmp_path / "quality.json"
    )  # the fake judge scores 7: the debate stops after round 1's check
    config.write_text(
        json.dumps(
            {"debate": {"rounds": 3, "terminationCondition": {"type": "quality", "threshold": 7}}}
        )
    )
    return [
        "--model",
        "fake:latency_ms=80,words=40",
        "--agents",
        ",".join(AGENTS),
        "--config",
        str(config),
        "--max-concurrency",
        "1",
        "--no-summary",
    ]


def positions(values: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(t["id"], t.get("position")) for t in values["transcript"]]


@pytest.mark.parametrize(
    "calls", [2, FIRST_ROUND - 1, FIRST_ROUND + 1], ids=["proposals", "refinements", "check"]
)
def test_a_killed_quality_debate_resumes_with_its_positions_and_never_runs_the_skipped_rounds(
    tmp_path: Path, calls: int
) -> None:
    args = run_args(tmp_path)
    whole = tmp_path / "whole.json"
    assert (
        in_process(
            "run", *args, "--db", str(tmp_path / "w.sqlite"), "--output", str(whole), "--quiet", "p"
        ).returncode
        == 0
    )
    reference = json.loads(whole.read_text())
    assert reference["stopped"] == "quality" and reference["stop_reason"]["round"] == 1

    db = tmp_path / "d.sqlite"
    code, done = stop_after(db, args, calls, signal.SIGKILL, tmp_path / "run.err")
    assert code == -signal.SIGKILL and done < FIRST_ROUND + 2
    out = tmp_path / "out.json"
    result = in_process("resume", "k", "--db", str(db), "--output", str(out))
    assert result.returncode == 0, result.stderr
    values = json.loads(out.read_text())
    assert values["settings"]["stop_rule"] == {"type": "quality", "min_round": 1, "threshold": 7}
    assert positions(values) == positions(reference)
    assert all(
        p for turn_id, p in positions(values) if turn_id.startswith(("proposal", "refinement"))
    )
    assert max(t["round"] for t in values["transcript"]) == 1  # no round-2 turn on resume
    assert values["assessments"] == reference["assessments"] and len(values["assessments"]) == 1
    assert values["spend"]["by_phase"]["assess"]["calls"] == 1
    assert values["solution"] == reference["solution"]
