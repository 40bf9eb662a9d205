"""The `debate` command line: outputs, exit codes, clear errors, kept turns, no secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from debate_engine.app.cli import main


def debate_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real console script in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "graph.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_the_issue_command_writes_every_turn(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    result = debate_cli(
        "run",
        "--model",
        "fake",
        "--rounds",
        "2",
        "--agents",
        "architect,performance,security",
        "--output",
        str(out),
        "Design a rate limiter",
    )
    assert result.returncode == 0, result.stderr
    state = json.loads(out.read_text())
    assert set(state) >= {"problem", "transcript", "summaries", "judge_summary", "solution"}
    per_round = Counter((t["round"], t["kind"]) for t in state["transcript"])
    for r in (1, 2):
        assert per_round[(r, "critique")] == 6 and per_round[(r, "refinement")] == 3
    assert per_round[(2, "synthesis")] == 1
    for turn in state["transcript"]:
        if turn["model"]:
            assert {"summary_id", "turn_ids", "prompt_tokens"} <= set(turn["view"])
    assert "[round 1/2] critique" in result.stderr
    assert result.stdout.strip(), "the solution goes to stdout"
    assert "Traceback" not in result.stderr


def test_bad_config_exits_2_with_every_problem(tmp_path: Path, capsys) -> None:
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"agents": [{"role": "wizard", "temperature": 9}], "debate": {"rounds": 0}}))
    assert main(["run", "--config", str(config), "problem"]) == 2
    err = capsys.readouterr().err
    assert "temperature: 9 is outside 0-2" in err and "debate.rounds" in err


def test_input_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    cases = [
        ("run", "--problem-file", str(tmp_path / "nope.txt")),
        ("run", "--agents", "architect,wizard", "--model", "fake", "p"),
        ("run", "--model", "fake", "--rounds", "0", "p"),
        ("run", "--model", "openai:gpt-4o-mini", "p"),
        ("run", "--model", "fake"),
        ("run", "--config", str(tmp_path / "missing.json"), "p"),
        ("show", "no-such-thread"),
    ]
    for args in cases:
        result = debate_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("error:") and "Traceback" not in result.stderr, (args, result.stderr)


def test_a_failing_provider_exits_3_keeps_turns_and_leaks_no_key(tmp_path: Path) -> None:
    secret = "sk-test-DO-NOT-LEAK-0123456789"
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": "a", "role": "architect", "model": "fake"},
                    {"id": "b", "role": "kiss", "model": "fake"},
                ],
                "judge": {"model": "openai:gpt-4o-mini"},
                "debate": {"rounds": 1},
            }
        )
    )
    db, report = tmp_path / "d.sqlite", tmp_path / "r.md"
    env = {"OPENAI_API_KEY": secret, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    result = debate_cli("run", "--config", str(config), "--db", str(db), "--thread-id", "t1", "p", env=env)
    assert result.returncode == 3, result.stderr
    assert "provider failed" in result.stderr and "debate resume t1" in result.stderr
    assert "Traceback" not in result.stderr and secret not in result.stderr + result.stdout
    shown = debate_cli("show", "t1", "--db", str(db), "--report", str(report), env=env)
    assert shown.returncode == 0 and "stopped (resumable)" in shown.stderr
    assert report.read_text().count("#### ") == 2 + 2 + 2  # proposals, critiques, refinements kept
    assert secret.encode() not in db.read_bytes() and secret not in report.read_text()


def quick_run(db: str, thread: str, problem: str = "p") -> list[str]:
    """Arguments of a one-round, one-agent debate on the fake model."""
    return [
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--agents",
        "kiss",
        "--db",
        db,
        "--thread-id",
        thread,
        "--quiet",
        problem,
    ]


def test_list_and_show(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "d.sqlite")
    assert main(quick_run(db, "one", "First problem\nmore")) == 0
    capsys.readouterr()
    assert main(["list", "--db", db]) == 0
    listing = capsys.readouterr().out
    assert "one\t" in listing and "done\t1/1\tFirst problem" in listing
    out = tmp_path / "s.json"
    assert main(["show", "one", "--db", db, "--output", str(out)]) == 0
    assert json.loads(out.read_text())["solution"]


def test_a_thread_id_is_never_reused(tmp_path: Path, capsys) -> None:
    args = quick_run(str(tmp_path / "d.sqlite"), "same")
    assert main(args) == 0
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err
