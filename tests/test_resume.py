"""Persistence: a debate killed mid-round resumes with no turn lost or repeated."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ARGS = ["--model", "fake:latency_ms=400,words=30", "--agents", "architect,performance,security", "--rounds", "2"]


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graph.cli", *args], capture_output=True, text=True, timeout=120, **kwargs
    )


def kinds(path: Path) -> Counter:
    return Counter((t["round"], t["kind"]) for t in json.loads(path.read_text())["transcript"])


def test_sigkill_mid_round_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    whole = tmp_path / "whole.json"
    assert cli("run", *ARGS, "--db", str(tmp_path / "w.sqlite"), "--output", str(whole), "p").returncode == 0

    process = subprocess.Popen(
        [sys.executable, "-m", "graph.cli", "run", *ARGS, "--db", str(db), "--thread-id", "k", "p"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:  # kill as soon as round 2's critiques are under way
        if "[round 2/2] critique" in line:
            time.sleep(0.6)
            break
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = 'k'").fetchone()[0] > 0
    listed = cli("list", "--db", str(db))
    assert "stopped (resumable)" in listed.stdout

    resumed = tmp_path / "resumed.json"
    result = cli("resume", "k", "--db", str(db), "--output", str(resumed))
    assert result.returncode == 0, result.stderr
    assert kinds(resumed) == kinds(whole)
    ids = [t["id"] for t in json.loads(resumed.read_text())["transcript"]]
    assert len(ids) == len(set(ids)), "a turn was repeated"


def test_a_debate_reloads_whole_in_a_fresh_process(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    assert (
        cli(
            "run",
            "--model",
            "fake",
            "--agents",
            "kiss,testing",
            "--rounds",
            "3",
            "--db",
            str(db),
            "--thread-id",
            "r",
            "--summary-method",
            "rolling",
            "p",
        ).returncode
        == 0
    )
    code = (
        "from debate_engine.graph import compile_debate; from debate_engine.app.persistence import open_checkpointer\n"
        f"with open_checkpointer({str(db)!r}) as s:\n"
        "    v = compile_debate(checkpointer=s).get_state({'configurable': {'thread_id': 'r'}}).values\n"
        "print(len(v['transcript']), type(v['transcript'][0]).__name__, v['solution'] is not None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert out.stdout.split() == [str(3 * (2 + 2 + 2) + 1), "dict", "True"], out.stderr
    assert "Deserializing unregistered type" not in out.stderr
