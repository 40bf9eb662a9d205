"""The queue commands without a server: JSON Lines validation, SQLite refusal, named database errors.

Nothing here needs PostgreSQL: a file with a bad line and a SQLite ``--db``
are refused before any connection, and the unreachable server is a closed
port on loopback. tests/integration/test_workers.py runs the real thing.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debate_engine.app.cli.main import main as cli_main
from debate_engine.app.cli.problem_lines import parse_problems
from debate_engine.app.cli.worker import handover_bound
from debate_engine.app.store.database import ThreadBusy, lock_key
from debate_engine.app.store.queue import HandedBack, Retry, new_job, server_of
from debate_engine.config.resolve import ConfigError

BASE = {
    "model": "fake",
    "agents": "kiss,security",
    "rounds": None,
    "config_file": "",
    "clarify": False,
    "max_output_tokens": None,
    "context_window": None,
    "max_concurrency": None,
    "summary_method": "",
    "summarize": None,
}
"""The fields ``context_fields`` makes from ``--model fake --agents kiss,security``."""


def closed_port() -> int:
    """Return a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def lines_file(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "problems.jsonl"
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


# --------------------------------------------------------------------------- JSON Lines


def test_every_line_becomes_a_debate_with_its_own_settings_over_the_options(tmp_path: Path) -> None:
    config = tmp_path / "team.json"
    config.write_text(
        json.dumps({"agents": [{"id": "a", "role": "kiss"}, {"id": "b", "role": "security"}]})
    )
    text = "\n".join(
        [
            json.dumps({"problem": "  Design a cache  ", "thread_id": "t1", "rounds": 3}),
            "",  # blank lines are skipped but still counted
            json.dumps(
                {"problem": "Design a queue", "model": "fake:words=20", "config": "team.json"}
            ),
        ]
    )
    entries = parse_problems(text, dict(BASE), tmp_path)
    assert [(e.line, e.problem) for e in entries] == [(1, "Design a cache"), (3, "Design a queue")]
    assert entries[0].thread_id == "t1" and entries[1].thread_id.startswith("debate-")
    # A job carries only what differs from a default Context: the options, overridden by the line.
    assert entries[0].context == {"model": "fake", "agents": "kiss,security", "rounds": 3}
    assert entries[1].context == {
        "model": "fake:words=20",
        "agents": "kiss,security",
        "config_file": str(config.resolve()),
    }


def test_a_bad_file_names_each_bad_line_and_field_and_queues_nothing(tmp_path: Path) -> None:
    text = "\n".join(
        [
            json.dumps({"problem": "fine", "thread_id": "a"}),
            "{not json",
            json.dumps({"problem": "x", "roundz": 2}),
            json.dumps({"problem": "x", "rounds": "three"}),
            json.dumps({"problem": "x", "rounds": 0}),
            json.dumps({"thread_id": "b"}),
            json.dumps(["problem"]),
            json.dumps({"problem": "again", "thread_id": "a"}),
            json.dumps({"problem": "x", "config": "missing.json"}),
        ]
    )
    with pytest.raises(ConfigError) as raised:
        parse_problems(text, dict(BASE), tmp_path)
    problems = raised.value.problems
    assert problems[-1] == "nothing was queued"
    assert [p.split(":", 1)[0] for p in problems[:-1]] == [f"line {n}" for n in range(2, 10)]
    assert problems[0].startswith("line 2: not valid JSON")
    assert problems[1].startswith("line 3: roundz: unknown setting")
    assert problems[2].startswith("line 4: rounds:")
    assert problems[3].startswith("line 5: rounds: 0 is out of range")
    assert problems[4].startswith("line 6: problem: required")
    assert problems[5].startswith("line 7: expected a JSON object")
    assert problems[6] == "line 8: thread_id: 'a' is also on line 1"
    assert problems[7].startswith("line 9: config: 'missing.json' is not a file")


def test_a_file_without_debates_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = lines_file(tmp_path, ["", "   "])
    code, out, err = run_cli(
        capsys,
        "submit",
        "--problems",
        str(path),
        "--db",
        f"postgresql://127.0.0.1:{closed_port()}/x",
    )
    assert code == 2 and out == "" and "holds no debates" in err


GOOD = st.builds(lambda r: {"problem": f"Design {r}", "rounds": r}, st.integers(1, 10))
BAD = st.sampled_from(
    [
        {"problem": ""},
        {"problem": "x", "rounds": -1},
        {"problem": "x", "agents": 7},
        {"problem": "x", "colour": "red"},
        "[1, 2",
        {"problem": "x", "max_concurrency": 0},
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(st.one_of(GOOD, BAD), min_size=1, max_size=12))
def test_a_file_is_queued_whole_or_refused_naming_exactly_its_bad_lines(
    lines: list[Any], tmp_path: Path
) -> None:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    bad = [
        n
        for n, x in enumerate(lines, 1)
        if isinstance(x, str) or "rounds" not in x or x["rounds"] < 1
    ]
    if not bad:
        entries = parse_problems(text, dict(BASE), tmp_path)
        assert [(e.line, e.context["rounds"]) for e in entries] == [
            (n, x["rounds"]) for n, x in enumerate(lines, 1)
        ]
        assert len({e.thread_id for e in entries}) == len(lines)
        return
    with pytest.raises(ConfigError) as raised:
        parse_problems(text, dict(BASE), tmp_path)
    named = [int(p.split(":", 1)[0].removeprefix("line ")) for p in raised.value.problems[:-1]]
    assert named == bad


def test_the_command_refuses_a_bad_line_before_touching_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = lines_file(tmp_path, [{"problem": "a"}, {"problem": "b", "rounds": 99999}])
    url = f"postgresql://127.0.0.1:{closed_port()}/x"  # nothing listens: reaching it would be another error
    code, out, err = run_cli(
        capsys, "submit", "--problems", str(path), "--model", "fake", "--db", url
    )
    assert code == 2 and out == ""
    assert "line 2: rounds: 99999 is out of range" in err and "nothing was queued" in err
    assert "cannot reach" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["submit", "--problems", "f.jsonl", "Design a cache"],
        ["submit", "--problems", "f.jsonl", "--thread-id", "t"],
    ],
)
def test_one_problem_and_a_file_do_not_mix(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    lines_file(tmp_path, [{"problem": "a"}]).rename(tmp_path / "f.jsonl")
    code, out, err = run_cli(capsys, *argv, "--db", f"postgresql://127.0.0.1:{closed_port()}/x")
    assert code == 2 and out == "" and "--problems" in err


# --------------------------------------------------------------------------- databases


@pytest.mark.parametrize(
    "command",
    [["submit", "--model", "fake", "Design a cache"], ["worker"], ["jobs"], ["jobs", "--wait"]],
)
def test_a_sqlite_database_is_refused_with_a_clear_message(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The conftest's DEBATE_DB is a SQLite file: the default database is refused as plainly as --db.
    for extra in ([], ["--db", str(tmp_path / "other.sqlite")]):
        code, out, err = run_cli(capsys, *command, *extra)
        assert code == 2 and out == ""
        assert (
            "needs a PostgreSQL database" in err and "SQLite file" in err and "Traceback" not in err
        )
    assert not (tmp_path / "other.sqlite").exists() and not (tmp_path / "debates.sqlite").exists()


@pytest.mark.parametrize(
    "command", [["jobs"], ["worker"], ["submit", "--model", "fake", "Design a cache"]]
)
def test_an_unreachable_server_or_a_bad_url_is_a_named_error(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    port = closed_port()
    code, _, err = run_cli(
        capsys, *command, "--db", f"postgresql://me:s3cret@127.0.0.1:{port}/debates"
    )
    assert code == 2 and f"cannot reach PostgreSQL at 127.0.0.1:{port}/debates" in err
    assert "s3cret" not in err and "Traceback" not in err
    code, _, err = run_cli(capsys, *command, "--db", "postgresql://host with spaces/x")
    assert code == 2 and "not a valid PostgreSQL URL" in err and "Traceback" not in err


def test_where_names_the_server_never_the_password() -> None:
    assert server_of("postgresql://u:secret@db.example:5433/debates") == "db.example:5433/debates"
    assert server_of("postgresql://u@db.example/debates") == "db.example:5432/debates"


# --------------------------------------------------------------------------- queue rules


def test_a_handed_back_job_is_requeued_at_once_a_busy_thread_later_and_a_failure_never() -> None:
    from datetime import UTC, datetime

    job = new_job("t1", "Design a cache", {"rounds": 2})
    assert (job.lock, job.queueing_lock, job.task_kwargs["thread_id"]) == ("t1", "t1", "t1")
    retry = Retry()
    before = datetime.now(UTC)
    now = retry.get_retry_decision(exception=HandedBack("stopped"), job=job)
    later = retry.get_retry_decision(exception=ThreadBusy("busy"), job=job)
    assert (
        now is not None and now.retry_at is not None and (now.retry_at - before).total_seconds() < 1
    )
    assert (
        later is not None
        and later.retry_at is not None
        and 4 < (later.retry_at - before).total_seconds() < 6
    )
    assert retry.get_retry_decision(exception=ConnectionError("provider"), job=job) is None
    assert retry.get_retry_decision(exception=ValueError("bug"), job=job) is None


def test_the_stated_hand_over_bound() -> None:
    # stall timeout + one sweep interval (a fifth of it) + one idle poll (1 s), by hand
    assert handover_bound(15) == 15 + 3 + 1 == 19
    assert handover_bound(5) == 5 + 1 + 1


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_advisory_lock_keys_are_signed_64_bit_and_differ_per_thread(a: str, b: str) -> None:
    assert -(2**63) <= lock_key(a) < 2**63
    assert lock_key(a) == lock_key(a)
    if a != b:
        assert lock_key(a) != lock_key(b)


# --------------------------------------------------------------------------- the job


def test_a_job_stopped_before_setup_resumes_anywhere_with_its_own_settings() -> None:
    import asyncio

    from langgraph.checkpoint.memory import InMemorySaver

    from debate_engine import compile_debate
    from debate_engine.app.store.queue import drive_thread

    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    stopped = compile_debate(
        checkpointer=saver, interrupt_before=["setup"]
    )  # a worker killed right there
    values = asyncio.run(
        drive_thread(
            {"phases": stopped},
            "t",
            "Design a cache",
            {"model": "fake", "agents": "kiss,security", "rounds": 1},
            "w",
        )
    )
    assert values["problem"] == "Design a cache" and "status" not in values  # setup has not run
    # Continued with no context at all, as `debate resume` does: the job's settings, not the defaults.
    final = compile_debate(checkpointer=saver).invoke(None, config)
    assert ([a["id"] for a in final["settings"]["agents"]], final["settings"]["rounds"]) == (
        ["kiss", "security"],
        1,
    )
    assert [t["id"] for t in final["transcript"]][-1] == "synthesis:r1:judge"
