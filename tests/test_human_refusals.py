"""Where no person can answer, a person's seat is refused by name; where a fork keeps one, it needs no key."""

from __future__ import annotations

from pathlib import Path

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.cli.problem_lines import resolve_line as _resolved
from debate_engine.app.store.forking import Changes, fork_settings
from debate_engine.config.context import Context, context_dict
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import is_human


def test_a_queued_debate_refuses_a_person_naming_the_seat() -> None:
    settings, problems = _resolved({"model": "fake", "agents": "architect,human"}, None)
    assert problems and "a person (human:human) cannot sit at a queued debate" in problems[0]
    assert settings is None
    settings, problems = _resolved({"model": "fake", "agents": "architect,kiss"}, None)
    assert problems == [] and [a["id"] for a in settings["agents"]] == ["architect", "kiss"]


def test_a_comparison_refuses_a_person(tmp_path: Path) -> None:
    argv = [
        "compare",
        "builtin:arithmetic:2",
        "--model",
        "fake",
        "--agents",
        "architect,human",
        "--protocols",
        "single",
        "--db",
        str(tmp_path / "c.sqlite"),
    ]
    assert main(argv) == 2
    assert not (tmp_path / "c.sqlite").exists() or (tmp_path / "c.sqlite").stat().st_size == 0


def test_a_fork_of_a_debate_with_a_person_checks_only_the_models_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    context = Context(
        model="openai:gpt-4o-mini", agents="architect,security", humans="pat", rounds=2
    )
    values = {"settings": resolve(context), "context": context_dict(context)}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fork-person")
    _, settings = fork_settings(values, Changes(rounds=3), 1)
    assert settings["rounds"] == 3 and any(is_human(a) for a in settings["agents"])


def test_input_that_ends_before_an_answer_keeps_the_question_pending(tmp_path: Path) -> None:
    from tests.test_human_cli import ALICE, TEAM, mine, run, typed

    db, out = str(tmp_path / "d.db"), tmp_path / "s.json"
    cut = run(
        "run",
        "--model",
        "fake",
        *TEAM,
        "--rounds",
        "1",
        "--human",
        "alice",
        "--db",
        db,
        "--thread-id",
        "t",
        "Design a rate limiter",
        stdin=typed("Token bucket per key", "c1"),
    )  # then the input ends
    assert cut.returncode == 2 and "the input ended before human:alice's answer" in cut.stderr
    assert "Traceback" not in cut.stderr and "passed" not in cut.stderr
    done = run("resume", "t", "--db", db, "--output", str(out), stdin=typed("c2", "c3", "refined"))
    assert done.returncode == 0, done.stderr
    assert (
        done.stderr.count("your turn: Critique") == 2
    )  # c1, typed before the input ended, was kept
    assert [t["content"] for t in mine(out)] == [
        "Token bucket per key",
        "c1",
        "c2",
        "c3",
        "refined",
    ]
    assert all(t["speaker"] == ALICE for t in mine(out))
