"""A person at the table through the ``debate`` command: scripted stdin, a kill while a question is pending.

The commands run in this process through the real entry point, stdin scripted; the kill needs a process of
its own, so that test is an integration test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.debate_cli import (
    Finished,
    cli_env,
    debate_command,
    finished_calls,
    in_process,
    wait_for,
)
from tests.support.openai_server import OpenAIServer

ALICE = "human:alice"
TEAM = ("--agents", "architect,performance,security")


def env(**extra: str) -> dict[str, str]:
    """Return the CLI's test environment with no editor: answers come from stdin unless a test sets one."""
    out = cli_env()
    out.pop("EDITOR", None)
    return {**out, **extra}


def typed(*answers: str) -> str:
    """Answers as a person types them at the terminal: each ended by a line holding only a dot."""
    return "".join(f"{a}\n.\n" for a in answers)


def run(*args: str, stdin: str, environ: dict[str, str] | None = None) -> Finished:
    return in_process(*args, env=environ or env(), stdin=stdin)


def mine(output: Path) -> list[dict[str, Any]]:
    return [t for t in json.loads(output.read_text())["transcript"] if t["speaker"] == ALICE]


def test_a_phase_debate_asks_each_turn_at_the_terminal_and_records_the_answers(
    tmp_path: Path,
) -> None:
    position = json.dumps(
        {"text": "Sliding window", "position": "sliding window", "confidence": 60}
    )
    answers = [
        "Token bucket per key",
        "c1",
        "c2",
        "",
        position,
        "c4",
        "c5\nsecond line",
        "c6",
        "final",
    ]
    done = run(
        "run",
        "--model",
        "fake",
        *TEAM,
        "--rounds",
        "2",
        "--human",
        "alice",
        "--db",
        str(tmp_path / "d.db"),
        "--output",
        str(tmp_path / "s.json"),
        "Design a rate limiter",
        stdin=typed(*answers),
    )
    assert done.returncode == 0, done.stderr
    tasks = [
        line.split("your turn: ")[1] for line in done.stderr.splitlines() if "your turn: " in line
    ]
    assert tasks[0] == "Propose a solution to the problem (round 1)."
    assert tasks[1:4] == [
        f"Critique {a}'s proposal (round 1)." for a in ("architect", "performance", "security")
    ]
    assert (
        len(tasks) == 9 and tasks[8].startswith("Refine your proposal") and "(round 2)" in tasks[8]
    )
    assert done.stderr.count("--- what a model in your seat is shown") == 9
    assert f"{ALICE} passed: the turn is recorded as '(passed)'" in done.stderr
    turns = mine(tmp_path / "s.json")
    assert [t["content"] for t in turns] == [
        *answers[:3],
        "(passed)",
        "Sliding window",
        *answers[5:],
    ]
    assert turns[4]["kind"] == "refinement" and turns[4]["position"]["position"] == "sliding window"
    assert all(t["model"] is None for t in turns)


def test_a_roundtable_gives_the_person_every_third_turn_and_a_pass(tmp_path: Path) -> None:
    answers = [f"alice at her turn {i}" for i in range(10)]
    answers[4] = ""
    done = run(
        "run",
        "--model",
        "fake",
        "--protocol",
        "roundtable",
        "--turns",
        "30",
        "--agents",
        "architect,security",
        "--human",
        "alice",
        "--no-summary",
        "--db",
        str(tmp_path / "d.db"),
        "--output",
        str(tmp_path / "s.json"),
        "Pick a cache",
        stdin=typed(*answers),
    )
    assert done.returncode == 0, done.stderr
    turns = mine(tmp_path / "s.json")
    assert [t["round"] for t in turns] == list(range(3, 31, 3))
    assert [t["content"] for t in turns] == [a or "(passed)" for a in answers]
    assert (
        done.stderr.count("Speak in the roundtable") == 10
        and done.stderr.count("passed: the turn") == 1
    )


@pytest.mark.integration  # a kill needs a process of its own
def test_a_pending_question_survives_sigkill_and_resume_asks_it_again(tmp_path: Path) -> None:
    db, log = tmp_path / "k.db", tmp_path / "run.err"
    args = (
        "--model",
        "openai:test-model",
        *TEAM,
        "--rounds",
        "1",
        "--human",
        "alice",
        "--db",
        str(db),
    )
    with OpenAIServer(words=20) as server:
        environ = env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test")
        with open(log, "w") as err:
            process = subprocess.Popen(
                [*debate_command(), "run", *args, "--thread-id", "k", "p"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
                env=environ,
            )
        try:  # the agents' proposals are sent and saved while alice's question waits
            wait_for(
                process,
                lambda: "your turn: Propose" in log.read_text() and finished_calls(db) >= 3,
                "alice's question",
                log,
            )
            proposals = server.prompts()
            assert len(proposals) == 3
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=30) == -signal.SIGKILL
        finally:
            if process.poll() is None:
                process.kill()
        server.requests.clear()
        resumed = run(
            "resume",
            "k",
            "--db",
            str(db),
            "--output",
            str(tmp_path / "s.json"),
            stdin=typed("Mine, after the kill", "c1", "c2", "c3", "refined"),
            environ=environ,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert "your turn: Propose a solution to the problem (round 1)." in resumed.stderr
        assert not set(proposals) & set(server.prompts()), (
            "a proposal that had finished was sent again"
        )
    assert [t["content"] for t in mine(tmp_path / "s.json")] == [
        "Mine, after the kill",
        "c1",
        "c2",
        "c3",
        "refined",
    ]


def test_the_answer_may_be_written_in_the_editor(tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'a').write('from the editor\\n')\n")
    done = run(
        "run",
        "--model",
        "fake",
        "--agents",
        "architect",
        "--rounds",
        "1",
        "--human",
        "alice",
        "--db",
        str(tmp_path / "d.db"),
        "--output",
        str(tmp_path / "s.json"),
        "p",
        stdin="",
        environ=env(EDITOR=f"{sys.executable} {editor}"),
    )
    assert done.returncode == 0, done.stderr
    assert [t["content"] for t in mine(tmp_path / "s.json")] == ["from the editor"] * 3


def test_an_editor_that_fails_leaves_the_question_pending(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    failed = run(
        "run",
        "--model",
        "fake",
        "--agents",
        "architect",
        "--rounds",
        "1",
        "--human",
        "alice",
        "--db",
        db,
        "--thread-id",
        "e",
        "p",
        stdin="",
        environ=env(EDITOR="false"),
    )
    assert failed.returncode == 2 and "$EDITOR 'false' exited with 1" in failed.stderr
    assert "Traceback" not in failed.stderr
    resumed = run("resume", "e", "--db", db, stdin=typed("now", "c", "r"))
    assert resumed.returncode == 0 and "your turn: Propose" in resumed.stderr, resumed.stderr


def test_bad_seats_are_refused_before_any_call(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": "architect", "role": "architect"},
                    {"id": "bob", "role": "human", "model": "fake"},
                ]
            }
        )
    )
    cases = {
        ("--human", "bad name"): "humans: 'bad name' is not a name for a seat",
        ("--human", "al", "--human", "al"): "humans: 'human:al' takes two seats",
        (
            "--human",
            "al",
            "--dry-run",
        ): "--dry-run cannot project a debate with a person at the table",
        ("--config", str(config)): "agents[1].model: a human seat has no model",
    }
    for flags, message in cases.items():
        done = run("run", "--model", "fake", *flags, "--db", str(tmp_path / "d.db"), "p", stdin="")
        assert done.returncode == 2 and message in done.stderr, (flags, done.stderr)
        assert "Traceback" not in done.stderr
