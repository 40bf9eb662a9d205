"""``debate fork``: what-if variants side by side, more rounds, and every bad input refused with nothing written."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.store.database import athread_lock
from tests.support.debate_cli import in_process

PROBLEM = "Design a rate limiter"


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a finished 3-agent debate of 2 rounds on the fake model, thread ``o``."""
    db = tmp_path_factory.mktemp("fork") / "d.sqlite"
    done = in_process(
        "run",
        "--model",
        "fake",
        "--agents",
        "architect,security,kiss",
        "--rounds",
        "2",
        "--thread-id",
        "o",
        "--db",
        str(db),
        "--quiet",
        PROBLEM,
    )
    assert done.returncode == 0, done.stderr
    return db


def rows(db: Path) -> list[tuple[str, int]]:
    """Every thread and its checkpoint count: what a refused fork must leave as it was."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id ORDER BY 1"
        ).fetchall()


def table_rows(out: str) -> list[list[str]]:
    """Return the cells of a Markdown table's body."""
    lines = [line for line in out.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def test_variants_list_each_verdict_and_mark_the_flips(original: Path) -> None:
    """The same model repeats the original's verdict; a different model, and a smaller panel, flip it."""
    variants = "model=fake;model=fake:words=30;agents=architect,security"
    ran = in_process(
        "fork",
        "o",
        "--round",
        "1",
        "--variants",
        variants,
        "--thread-id",
        "v",
        "--db",
        str(original),
    )
    assert ran.returncode == 0, ran.stderr
    found = table_rows(ran.stdout)
    assert [r[0] for r in found] == [
        "original",
        "model=fake",
        "model=fake:words=30",
        "agents=architect,security",
    ]
    assert [r[1] for r in found] == ["o", "v-1", "v-2", "v-3"]
    assert [r[4] for r in found] == ["", "no", "yes", "yes"]
    assert found[1][2] == found[0][2] and found[2][2] != found[0][2]
    assert [r[3] for r in found] == ["1 of 3", "1 of 3", "1 of 3", "1 of 2"]
    listed = {
        r["thread"]: r
        for r in map(
            json.loads, in_process("list", "--json", "--db", str(original)).stdout.splitlines()
        )
    }
    assert {t: listed[t]["forked_from"]["round"] for t in ("v-1", "v-2", "v-3")} == {
        "v-1": 1,
        "v-2": 1,
        "v-3": 1,
    }


def test_a_fork_may_run_more_rounds_than_the_original(
    original: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "fork",
                "o",
                "--round",
                "2",
                "--rounds",
                "3",
                "--thread-id",
                "more",
                "--db",
                str(original),
                "--quiet",
                "--output",
                str(original.parent / "more.json"),
            ]
        )
        == 0
    )
    state = json.loads((original.parent / "more.json").read_text())
    assert state["settings"]["rounds"] == 3 and state["status"]["rounds"] == 3
    assert max(t["round"] for t in state["transcript"]) == 3 and state["solution"]


def bad(original: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run a fork that must be refused: exit 2, no traceback, nothing written; its message."""
    before = rows(original)
    assert main(["fork", *args, "--db", str(original)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ")
    assert rows(original) == before
    return err


@pytest.mark.parametrize(
    "args,message",
    [
        (["nope", "--round", "1"], r"no debate 'nope' in .*d\.sqlite; see `debate list`"),
        (
            ["o", "--round", "3"],
            r"--round 3: debate o has finished rounds 1-2; fork at one of those",
        ),
        (["o", "--round", "0"], r"--round 0: rounds count from 1"),
        (
            ["o", "--round", "2", "--rounds", "1"],
            r"rounds: 1 in all ends before the fork's round 2; give --rounds 2",
        ),
        (
            ["o", "--round", "1", "--variants", "model=fake;modl=fake"],
            r"'modl=fake' in variant 2 is not KEY=VALUE",
        ),
        (["o", "--round", "1", "--variants", "model=fake;"], r"variant 2 is empty"),
        (
            ["o", "--round", "1", "--variants", "rounds=two"],
            r"rounds='two' in variant 1 is not a whole number",
        ),
        (
            ["o", "--round", "1", "--variants", "model=fake", "--report", "r.md"],
            r"with --variants, write each fork's",
        ),
        (["o", "--round", "1", "--thread-id", "o"], r"--thread-id o: that is the original"),
        (
            ["o", "--round", "1", "--variants", "model=fake", "--queue"],
            r"--queue hands the forks to `debate worker`s, "
            r"which share a PostgreSQL database",
        ),
        (
            ["o", "--round", "1", "--queue"],
            r"one fork runs here: add --variants, or leave --queue out",
        ),
        (["o", "--round", "1", "--agents", "wizard"], r"agents: 'wizard' is not a role"),
        (["o", "--round", "1", "--model", "openai:gpt-4o-mini"], r"OPENAI_API_KEY is not set"),
    ],
)
def test_bad_input_is_refused_with_nothing_written(
    original: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert re.search(message, bad(original, capsys, *args))


def test_a_setting_that_acts_before_round_1_is_refused(
    original: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = original.parent / "clarify.json"
    config.write_text(json.dumps({"debate": {"interactiveClarifications": True}}))
    err = bad(original, capsys, "o", "--round", "1", "--config", str(config))
    assert "clarify: the fork would change it from False to True" in err


def test_an_existing_thread_is_never_written_over(
    original: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            ["fork", "o", "--round", "1", "--thread-id", "taken", "--db", str(original), "--quiet"]
        )
        == 0
    )
    capsys.readouterr()
    assert "thread taken already holds a debate" in bad(
        original, capsys, "o", "--round", "1", "--thread-id", "taken"
    )


def test_a_running_debate_is_not_forked(original: Path) -> None:
    before = rows(original)
    with asyncio.Runner() as loop:
        held = athread_lock(str(original), "o")  # as the process running it holds it
        loop.run(held.__aenter__())
        try:  # a lock file opened apart excludes this process too: the fork is refused as in another
            ran = in_process("fork", "o", "--round", "1", "--db", str(original))
        finally:
            loop.run(held.__aexit__(None, None, None))
    assert ran.returncode == 2 and "error: debate o is running in another process" in ran.stderr
    assert rows(original) == before


def test_the_readme_time_travel_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The "Fork a debate" section's Python example, as it stands: on the fake model and the in-memory saver."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Fork a debate\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the 'Fork a debate' section has no ```python block"
    exec(compile(found.group(1), "README.md", "exec"), {"__name__": "readme_fork_example"})
    assert capsys.readouterr().out.splitlines() == ["True fake:words=30", "fake:words=30"]
