"""A debate stopped by a signal or killed mid-phase resumes to the same debate, with no turn lost.

Every test runs the real ``debate`` command in a subprocess on a SQLite file
in the test's folder, and stops it after N finished model calls, read from that
file while the run goes on (tests/support/debate_cli.py). The signal is the
point, so these are integration tests (``make test``); the uninterrupted run,
the resume and the listings go through the entry point in this process, which
shares nothing with the stopped one but the file. The expected transcript is
written out by hand (ids, tests/support/resume_debate.py) and compared with an
uninterrupted run (contents).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.debate_cli import background, finished_calls, in_process, wait_for
from tests.support.resume_debate import EXPECTED_IDS, ROUNDS, STOP_WAIT_S, TEAM, TOTAL

pytestmark = pytest.mark.integration  # signals need a process of their own

SMALL = [
    "--context-window",
    "2048",
    "--max-output-tokens",
    "256",
]  # the judge's history overflows: one summary
SLOW = [
    "--model",
    "fake:latency_ms=300,words=40",
    *TEAM,
]  # the lead's scenario: a phase is visibly mid-way
QUICK = [
    "--model",
    "fake:latency_ms=80,words=40",
    *TEAM,
    *SMALL,
]  # faster, and a summary to redo on resume


def stop_after(db: Path, args: list[str], calls: int, signum: int, log: Path) -> tuple[int, int]:
    """Run thread ``k`` until ``calls`` model calls have finished, send ``signum``; return (exit code, calls done)."""
    with background("run", *args, "--thread-id", "k", "--db", str(db), "p", log=log) as process:
        wait_for(process, lambda: finished_calls(db) >= calls, f"{calls} finished calls", log)
        assert process.poll() is None
        process.send_signal(signum)
        try:
            code = process.wait(timeout=STOP_WAIT_S if signum != signal.SIGKILL else 30)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"the run did not exit within {STOP_WAIT_S} s of {signal.Signals(signum).name}"
            )
    return code, finished_calls(db)


def transcript_key(values: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (t["seq"], t["id"], t["kind"], t["round"], t["speaker"], t["target"], t["content"])
        for t in values["transcript"]
    ]


def summary_key(values: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s["id"], s["agent_id"], s["through"], s["status"], s["text"])
        for s in values["summary_log"]
    ]


def resume_and_check(db: Path, out: Path, reference: dict[str, Any]) -> dict[str, Any]:
    """Resume thread ``k`` to its end and check it against the plan and the uninterrupted run."""
    result = in_process(
        "resume", "k", "--db", str(db), "--output", str(out)
    )  # not --quiet: its first line is checked
    assert result.returncode == 0, result.stderr
    assert "resuming debate k at" in result.stderr  # it really had stopped part-way
    values = json.loads(out.read_text())
    ids = [t["id"] for t in values["transcript"]]
    assert ids == EXPECTED_IDS
    assert len(set(ids)) == len(ids), "a turn was recorded twice"
    assert [t["seq"] for t in values["transcript"]] == list(range(TOTAL))
    assert transcript_key(values) == transcript_key(reference)
    assert summary_key(values) == summary_key(reference)
    # the verdict names the model that answered, latency and all: the reference ran without it
    said = re.sub(r"latency_ms=\d+,", "", json.dumps(values["solution"]))
    assert json.loads(said) == reference["solution"]
    status, whole = values["status"], reference["status"]
    assert (status["phase"], status["round"], status["turns"]) == ("done", ROUNDS, TOTAL)
    assert (status["summaries"], status["tokens"]) == (whole["summaries"], whole["tokens"])
    return values


def list_rows(db: Path) -> dict[str, list[str]]:
    result = in_process("list", "--db", str(db))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split("\t") == [
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
    return {cells[0]: cells for cells in (line.split("\t") for line in lines[1:])}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``reference(args)``: the same debate run without interruption in its own database, once per module.

    The fake model's latency is left out: it is in no prompt, so the debate is the same without it.
    """
    runs: dict[tuple[str, ...], dict[str, Any]] = {}

    def of(args: list[str]) -> dict[str, Any]:
        key = tuple("fake:words=40" if a.startswith("fake:") else a for a in args if a != "--quiet")
        if key not in runs:
            folder = tmp_path_factory.mktemp("whole")
            out = folder / "whole.json"
            result = in_process(
                "run",
                *key,
                "--thread-id",
                "w",
                "--db",
                str(folder / "w.sqlite"),
                "--output",
                str(out),
                "--quiet",
                "p",
            )
            assert result.returncode == 0, result.stderr
            values = json.loads(out.read_text())
            assert [t["id"] for t in values["transcript"]] == EXPECTED_IDS
            if (
                "--context-window" in key
            ):  # the small window must really make the resumed run redo a summary
                assert [(s["agent_id"], s["status"]) for s in values["summary_log"]] == [
                    ("judge", "ok")
                ]
            runs[key] = values
        return runs[key]

    return of


# --------------------------------------------------------------------------- 1. SIGINT mid-phase


def test_sigint_mid_critique_exits_130_lists_interrupted_and_resumes_to_the_same_debate(
    tmp_path: Path, reference: Any
) -> None:
    db = tmp_path / "d.sqlite"
    # 3 proposals + 2 of the 6 round-1 critiques: the critique phase is half done
    code, done = stop_after(db, [*SLOW, "--quiet"], 5, signal.SIGINT, tmp_path / "run.err")
    stderr = (tmp_path / "run.err").read_text()
    assert code == 130, stderr
    assert 5 <= done < 3 + 6, f"{done} calls finished: not stopped inside round 1's critiques"
    assert "interrupted" in stderr
    assert f"debate resume k --db {db}" in stderr

    row = list_rows(db)["k"]
    # status is the last finished phase: propose of round 1 of 2, three turns
    assert row[2:6] + row[8:] == ["interrupted", "1/2", "propose", "3", "p", "-"]
    assert int(row[6]) > 0 and row[7] == "$0.0000"  # the spend so far: the fake model is free

    resume_and_check(db, tmp_path / "out.json", reference(SLOW))
    assert list_rows(db)["k"][2:6] + list_rows(db)["k"][8:] == [
        "done",
        "2/2",
        "done",
        "22",
        "p",
        "-",
    ]


# --------------------------------------------------------------------------- 2. SIGTERM and SIGKILL


@pytest.mark.parametrize(
    ("signum", "calls", "code"),
    [
        (signal.SIGTERM, 7, 143),  # inside round 1's critiques
        (signal.SIGKILL, 2, -signal.SIGKILL),  # inside the proposals
        (signal.SIGKILL, 7, -signal.SIGKILL),  # inside round 1's critiques
        (signal.SIGKILL, 11, -signal.SIGKILL),  # inside round 1's refinements
    ],
    ids=["sigterm-7", "sigkill-2", "sigkill-7", "sigkill-11"],
)
def test_a_terminated_or_killed_run_resumes_to_the_same_debate(
    tmp_path: Path, reference: Any, signum: int, calls: int, code: int
) -> None:
    db = tmp_path / "d.sqlite"
    got, done = stop_after(db, QUICK, calls, signum, tmp_path / "run.err")
    stderr = (tmp_path / "run.err").read_text()
    assert got == code, stderr
    assert calls <= done < TOTAL
    if signum == signal.SIGTERM:
        assert "terminated" in stderr
        assert f"debate resume k --db {db}" in stderr
    resume_and_check(db, tmp_path / "out.json", reference(QUICK))


def test_a_stop_inside_a_summary_does_not_wait_for_the_model_to_answer(tmp_path: Path) -> None:
    """A summary runs in a thread that cancelling cannot stop: the exit must not wait for its 30 s answer."""
    db, log = tmp_path / "d.sqlite", tmp_path / "run.err"
    args = [
        "run",
        "--protocol",
        "roundtable",
        "--turns",
        "40",
        "--agents",
        "architect,kiss",
        "--model",
        "fake:words=120,summary_latency_ms=30000",
        *SMALL,
        "--verbose",
        "--thread-id",
        "k",
        "--db",
        str(db),
        "p",
    ]
    with background(*args, log=log) as process:
        wait_for(process, lambda: "summarizing" in log.read_text(), "a summary in flight", log)
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run waited for the summary instead of exiting within {STOP_WAIT_S} s")
    assert code == 130 and f"debate resume k --db {db}" in log.read_text()
    row = list_rows(db)["k"]
    assert row[2] == "interrupted" and int(row[5]) > 0  # the turns before the summary are kept


# --------------------------------------------------------------------------- 3. property: any stop point


@settings(
    max_examples=5,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # each example is two processes: no shrinking marathon
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    calls=st.integers(min_value=1, max_value=TOTAL - 1),
    signum=st.sampled_from([signal.SIGINT, signal.SIGTERM, signal.SIGKILL]),
)
def test_stopped_at_any_call_by_any_signal_the_resumed_debate_is_the_same(
    tmp_path_factory: pytest.TempPathFactory, reference: Any, calls: int, signum: int
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    db = folder / "d.sqlite"
    code, done = stop_after(db, [*QUICK, "--quiet"], calls, signum, folder / "run.err")
    expected = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}[signum]
    assert code == expected, (folder / "run.err").read_text()
    assert calls <= done < TOTAL
    resume_and_check(db, folder / "out.json", reference(QUICK))
