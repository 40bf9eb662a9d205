"""The `debate` command line, in-process: outputs, exit codes, named errors, kept turns, no secrets.

It is one module because each test is one row of the command line's contract, read through the one entry point.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from tests.support.openai_server import OpenAIServer


def quick(
    db: Path, thread: str | None = "one", *extra: str, problem: str = "First problem\nmore"
) -> list[str]:
    """Return a one-round debate of two agents on the fake model."""
    ids = ["--thread-id", thread] if thread else []
    return [
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--agents",
        "kiss,testing",
        "--db",
        str(db),
        "--quiet",
        *ids,
        *extra,
        problem,
    ]


def listing(db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[list[str]], str]:
    capsys.readouterr()
    assert main(["list", "--db", str(db)]) == 0
    captured = capsys.readouterr()
    return [line.split("\t") for line in captured.out.splitlines()], captured.err


def test_run_writes_the_whole_debate_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "state.json"
    args = [
        "run",
        "--model",
        "fake",
        "--rounds",
        "2",
        "--agents",
        "architect,performance,security",
        "--db",
        str(tmp_path / "d.sqlite"),
        "--output",
        str(out),
        "Design a rate limiter",
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    state = json.loads(out.read_text())
    assert set(state) == {
        "problem",
        "settings",
        "agents",
        "judge",
        "status",
        "transcript",
        "summary_log",
        "solution",
        "spend",
        "stopped",
        "moderation",
        "facets",
        "stop_reason",
        "assessments",
        "forked_from",
    }
    assert state["problem"] == "Design a rate limiter"
    per_round = Counter((t["round"], t["kind"]) for t in state["transcript"])
    assert per_round == Counter(
        {
            (1, "proposal"): 3,
            (1, "critique"): 6,
            (1, "refinement"): 3,
            (2, "critique"): 6,
            (2, "refinement"): 3,
            (2, "synthesis"): 1,
        }
    )
    assert [a["id"] for a in state["agents"]] == ["architect", "performance", "security"]
    assert "system_prompt" not in json.dumps(state)
    assert (
        state["solution"]["description"] and state["solution"]["description"][:40] in captured.out
    )
    assert "[round 1/2] critique" in captured.err and "[round 2/2] refine" in captured.err
    assert "Traceback" not in captured.err


def test_version_matches_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert (
        capsys.readouterr().out.strip() == f"debate {importlib.metadata.version('debate-engine')}"
    )


def bad_problem_file(tmp_path: Path) -> str:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Caf\xe9 design: \xff\xfe".encode("latin-1"))
    return str(path)


INPUT_ERRORS: list[tuple[str, Any, str]] = [
    ("missing problem", lambda p: ["run", "--model", "fake"], "no problem given"),
    (
        "missing config",
        lambda p: ["run", "--config", str(p / "missing.json"), "x"],
        "does not exist",
    ),
    ("bad model", lambda p: ["run", "--model", "gpt4", "x"], "unknown provider 'gpt4'"),
    ("zero rounds", lambda p: ["run", "--model", "fake", "--rounds", "0", "x"], "rounds: 0"),
    (
        "tiny window",
        lambda p: ["run", "--model", "fake", "--context-window", "10", "x"],
        "context_window: 10 is out of range; use a number from 512",
    ),
    (
        "huge output",
        lambda p: ["run", "--model", "fake", "--max-output-tokens", "9000", "x"],
        "window of 8192 tokens leaves -808",
    ),
    (
        "output is a folder",
        lambda p: ["run", "--model", "fake", "--output", str(p), "x"],
        "is a directory",
    ),
    (
        "report is a folder",
        lambda p: ["run", "--model", "fake", "--report", str(p), "x"],
        "is a directory",
    ),
    (
        "not UTF-8",
        lambda p: ["run", "--model", "fake", "--problem-file", bad_problem_file(p)],
        "is not UTF-8",
    ),
    (
        "missing problem file",
        lambda p: ["run", "--model", "fake", "--problem-file", str(p / "nope.txt")],
        "cannot read problem file",
    ),
    (
        "unknown agent",
        lambda p: ["run", "--model", "fake", "--agents", "architect,wizard", "x"],
        "'wizard' is not a role",
    ),
]


@pytest.mark.parametrize(
    ("case", "args", "message"), INPUT_ERRORS, ids=[c[0] for c in INPUT_ERRORS]
)
def test_input_errors_exit_2_with_a_named_message_and_run_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, args: Any, message: str
) -> None:
    db = tmp_path / "d.sqlite"
    assert main([*args(tmp_path), "--db", str(db), "--thread-id", "never"]) == 2, case
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err, err
    assert "Traceback" not in err
    rows, note = listing(db, capsys)
    assert rows == [] and "no debates yet" in note


def test_a_bad_config_names_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.json"
    config.write_text(
        json.dumps({"agents": [{"role": "wizard", "temperature": 9}], "debate": {"rounds": 0}})
    )
    assert (
        main(["run", "--config", str(config), "--db", str(tmp_path / "d.sqlite"), "problem"]) == 2
    )
    err = capsys.readouterr().err
    assert "agents[0].temperature: 9 is outside 0-2" in err and "debate.rounds: 0" in err
    assert "Traceback" not in err


def test_list_show_and_report_a_finished_debate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.sqlite"
    assert main(quick(db)) == 0
    rows, _ = listing(db, capsys)
    assert rows[0] == [
        "thread",
        "updated",
        "status",
        "round",
        "phase",
        "turns",
        "tokens",
        "cost",
        "problem",
        "forked from",
    ]
    assert len(rows) == 2
    thread, updated, status, round_, phase, turns, tokens, cost, problem, forked = rows[1]
    assert forked == "-"
    assert int(tokens) > 0 and cost == "$0.0000"
    assert (thread, status, round_, phase, turns, problem) == (
        "one",
        "done",
        "1/1",
        "done",
        "7",
        "First problem",
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", updated)

    out = tmp_path / "shown.json"
    assert main(["show", "one", "--db", str(db), "--output", str(out)]) == 0
    shown = capsys.readouterr()
    assert "thread one: round 1/1, after synthesis" in shown.err
    state = json.loads(out.read_text())
    assert len(state["transcript"]) == 7 and state["solution"]["description"][:40] in shown.out

    assert main(["report", "one", "--db", str(db)]) == 0
    report = capsys.readouterr().out
    assert report.startswith("# Debate report\n")
    for heading in (
        "## Problem",
        "## Agents",
        "## Round 1",
        "### Proposals",
        "### Critiques",
        "### Refinements",
        "## Final solution",
        "## Figures",
    ):
        assert f"\n{heading}\n" in report, heading
    assert "#### kiss on testing" in report and "#### testing on kiss" in report


def test_show_of_an_unknown_thread_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "nothing-here", "--db", str(tmp_path / "d.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "no debate 'nothing-here'" in err and "Traceback" not in err


def test_a_thread_id_is_never_reused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "d.sqlite"
    assert main(quick(db, "same")) == 0
    first = json.loads(json.dumps(listing(db, capsys)[0]))
    assert main(quick(db, "same", problem="Another problem")) == 2
    err = capsys.readouterr().err
    assert "thread same already holds a debate" in err and "debate resume same" in err
    assert listing(db, capsys)[0] == first, "the refused run changed the stored debate"


def test_a_provider_failure_exits_3_with_the_resume_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.sqlite"
    args = [
        "run",
        "--model",
        "fake:fail=transport",
        "--agents",
        "kiss",
        "--rounds",
        "1",
        "--db",
        str(db),
    ]
    assert main([*args, "--thread-id", "boom", "p"]) == 3
    err = capsys.readouterr().err
    assert "the model provider failed" in err and "ConnectionError" in err
    assert f"continue with: debate resume boom --db {db}" in err and "Traceback" not in err

    assert main([*args, "p"]) == 3  # a generated thread id is named too
    err = capsys.readouterr().err
    generated = re.search(r"^debate (debate-\S+)$", err, re.M)
    assert generated and f"debate resume {generated.group(1)}" in err
    rows, _ = listing(db, capsys)
    assert {(r[0], r[2]) for r in rows[1:]} == {
        ("boom", "interrupted"),
        (generated.group(1), "interrupted"),
    }


def test_a_failing_provider_keeps_the_turns_leaks_no_key_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-DO-NOT-LEAK-0123456789"
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": "a", "role": "architect", "model": "fake"},
                    {"id": "b", "role": "kiss", "model": "fake"},
                ],
                "judge": {"model": "openai:test-model"},
                "debate": {"rounds": 1},
            }
        )
    )
    db, report, state = tmp_path / "d.sqlite", tmp_path / "r.md", tmp_path / "s.json"
    with OpenAIServer(words=20) as server:
        server.always = "echo_key"  # a 401 whose message repeats the Authorization header
        monkeypatch.setenv("OPENAI_API_KEY", secret)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert (
            main(
                [
                    "run",
                    "--config",
                    str(config),
                    "--db",
                    str(db),
                    "--thread-id",
                    "t1",
                    "--quiet",
                    "p",
                ]
            )
            == 3
        )
        err = capsys.readouterr().err
        assert "the model provider failed" in err and "debate resume t1" in err
        assert secret not in err and "Traceback" not in err
        assert any(secret in r["headers"].get("authorization", "") for r in server.requests), (
            "the key was sent"
        )

        assert main(["show", "t1", "--db", str(db), "--report", str(report)]) == 0
        shown = capsys.readouterr()
        assert "has not finished" in shown.err
        assert (
            report.read_text().count("\n#### ") == 2 + 2 + 2
        )  # proposals, critiques, refinements kept
        rows, _ = listing(db, capsys)
        assert rows[1][2:6] == ["interrupted", "1/1", "refine", "6"]

        server.always = None  # the provider recovers; resume, as a user would
        resumed = main(["resume", "t1", "--db", str(db), "--quiet", "--output", str(state)])
        shown = capsys.readouterr()
        assert resumed == 0, shown.err
        assert secret not in shown.err + shown.out
    transcript = json.loads(state.read_text())["transcript"]
    assert [t["kind"] for t in transcript].count("synthesis") == 1 and len(transcript) == 7
    assert len({t["id"] for t in transcript}) == 7
    for path in (db, report, state):
        assert secret.encode() not in path.read_bytes(), path


def test_two_commands_in_one_process_can_use_the_same_openai_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command runs its own event loop; a model client must not outlive the loop it was bound to."""
    db = tmp_path / "d.sqlite"
    with OpenAIServer(words=20) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loop")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for thread in ("first", "second"):
            args = [
                "run",
                "--model",
                "openai:test-model",
                "--agents",
                "kiss",
                "--rounds",
                "1",
                "--db",
                str(db),
                "--thread-id",
                thread,
                "--quiet",
                "p",
            ]
            assert main(args) == 0, capsys.readouterr().err
    rows, _ = listing(db, capsys)
    assert {(r[0], r[2]) for r in rows[1:]} == {("first", "done"), ("second", "done")}
