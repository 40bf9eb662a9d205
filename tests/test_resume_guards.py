"""What resume refuses: a thread another process is running, a thread that does not exist.

A second process and a fresh interpreter are the point of these tests: integration tests (``make test``).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.debate_cli import (
    background,
    cli,
    cli_env,
    debate_command,
    finished_calls,
    wait_for,
)
from tests.support.resume_debate import TEAM, TOTAL

pytestmark = pytest.mark.integration


def checkpoints(db: Path, thread: str = "k") -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(
                conn.execute(
                    "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread,)
                ).fetchone()[0]
            )
    except sqlite3.Error:
        return 0


# --------------------------------------------------------------------------- one process per thread


def test_a_second_process_on_a_running_thread_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    slow = [
        "--model",
        "fake:latency_ms=700,words=40",
        *TEAM,
    ]  # 22 calls: about 15 s, far longer than the checks
    with background(
        "run", *slow, "--thread-id", "k", "--db", str(db), "p", log=tmp_path / "run.err"
    ) as process:
        wait_for(
            process, lambda: checkpoints(db) >= 2, "the set-up checkpoint", tmp_path / "run.err"
        )  # input + setup: status exists
        env = cli_env()
        lister = subprocess.Popen(
            [*debate_command(), "list", "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        second = cli("resume", "k", "--db", str(db), "--quiet")
        again = cli("run", *slow, "--thread-id", "k", "--db", str(db), "--quiet", "p")
        listed, list_err = lister.communicate(timeout=120)
        assert process.poll() is None, "the first run ended before the checks; they prove nothing"
        assert finished_calls(db) < TOTAL

    for result in (second, again):
        assert result.returncode == 2, result.stderr
        assert "debate k is running in another process" in result.stderr
        assert "Traceback" not in result.stderr
    assert lister.returncode == 0, list_err
    rows = [line.split("\t") for line in listed.splitlines()[1:]]
    assert [(r[0], r[2], r[3][-2:], r[8]) for r in rows] == [("k", "running", "/2", "p")]


# --------------------------------------------------------------------------- the module entry point


def test_python_dash_m_reports_a_missing_thread_like_the_script(tmp_path: Path) -> None:
    """``python -m debate_engine.app.cli.main`` must map errors to exit codes exactly as the ``debate`` script does."""
    db = tmp_path / "d.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "debate_engine.app.cli.main", "resume", "nope", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    assert "Traceback" not in result.stderr, result.stderr[-1500:]
    assert result.returncode == 2
    assert "no debate 'nope'" in result.stderr
