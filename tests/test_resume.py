"""A debate stopped by a signal or killed mid-phase resumes with no turn lost and no finished call repeated.

Every test drives the real ``debate`` command in subprocesses on a SQLite file
in the test's folder. Progress is read from that file while the run goes on:
each finished model call is one ``__return__`` write of its task, so "after N
contributions" is observable without timing. The expected transcript is
written out by hand (ids) and compared with an uninterrupted run (contents).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.openai_server import OpenAIServer

AGENTS = ["architect", "performance", "security"]
ROUNDS = 2
TEAM = ["--agents", ",".join(AGENTS), "--rounds", str(ROUNDS), "--max-concurrency", "1"]
SMALL = ["--context-window", "2048", "--max-output-tokens", "256"]  # the judge's history overflows: one summary
SLOW = ["--model", "fake:latency_ms=300,words=40", *TEAM]  # the lead's scenario: a phase is visibly mid-way
QUICK = ["--model", "fake:latency_ms=80,words=40", *TEAM, *SMALL]  # faster, and a summary to redo on resume
STOP_WAIT_S = 3.0
"""A stopped run must exit this soon after SIGINT/SIGTERM (it only has to cancel and close the database)."""


def _expected_ids() -> list[str]:
    """The whole debate's turn ids, in order, written out from the protocol (3 agents, 2 rounds)."""
    pairs = [(a, b) for a in AGENTS for b in AGENTS if a != b]
    ids = [f"proposal:r1:{a}" for a in AGENTS]
    for r in range(1, ROUNDS + 1):
        ids += [f"critique:r{r}:{a}->{b}" for a, b in pairs]
        ids += [f"refinement:r{r}:{a}" for a in AGENTS]
    return [*ids, f"synthesis:r{ROUNDS}:judge"]


EXPECTED_IDS = _expected_ids()
TOTAL = len(EXPECTED_IDS)  # 3 + 2 * (6 + 3) + 1 = 22 contributions
assert TOTAL == 22


# --------------------------------------------------------------------------- subprocess helpers


def debate_command() -> list[str]:
    """The installed console script next to this interpreter (what users run)."""
    script = Path(sys.executable).parent / "debate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "debate_engine.app.cli"]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of every CLI run: no default model, blank keys, no tracing, nothing but loopback."""
    drop = {"DEBATE_MODEL", "DEBATE_DB", "OPENAI_BASE_URL", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(OPENAI_API_KEY="", LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``debate ARGS`` to its end."""
    return subprocess.run(
        [*debate_command(), *args], capture_output=True, text=True, timeout=120, env=env or cli_env()
    )


@contextmanager
def background(
    *args: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """Start ``debate ARGS`` with stderr in ``log``; whatever happens, the process is gone afterwards."""
    with open(log, "w") as err:
        process = subprocess.Popen(
            [*debate_command(), *args], stdout=subprocess.DEVNULL, stderr=err, text=True, env=env or cli_env()
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def finished_calls(db: Path, thread: str = "k") -> int:
    """Model calls of ``thread`` whose result is in the checkpoint (summaries not counted)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM writes WHERE thread_id = ? AND channel = '__return__' "
                "AND task_path NOT LIKE '%summarize%'",
                (thread,),
            ).fetchone()
    except sqlite3.Error:  # not created yet, or busy for a moment
        return 0
    return int(row[0])


def checkpoints(db: Path, thread: str = "k") -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread,)).fetchone()[0])
    except sqlite3.Error:
        return 0


def wait_for(process: subprocess.Popen[str], ready: Any, what: str, log: Path, limit_s: float = 60) -> None:
    """Poll until ``ready()``; fail (never hang) when the process ends first or nothing happens."""
    deadline = time.monotonic() + limit_s
    while not ready():
        if process.poll() is not None:
            pytest.fail(f"the run ended (exit {process.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {limit_s} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.005)


def stop_after(db: Path, args: list[str], calls: int, signum: int, log: Path) -> tuple[int, int]:
    """Run thread ``k`` until ``calls`` model calls have finished, send ``signum``; return (exit code, calls done)."""
    with background("run", *args, "--thread-id", "k", "--db", str(db), "p", log=log) as process:
        wait_for(process, lambda: finished_calls(db) >= calls, f"{calls} finished calls", log)
        assert process.poll() is None
        process.send_signal(signum)
        try:
            code = process.wait(timeout=STOP_WAIT_S if signum != signal.SIGKILL else 30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run did not exit within {STOP_WAIT_S} s of {signal.Signals(signum).name}")
    return code, finished_calls(db)


def transcript_key(values: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(t["seq"], t["id"], t["kind"], t["round"], t["speaker"], t["target"], t["content"])
            for t in values["transcript"]]


def summary_key(values: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(s["id"], s["agent_id"], s["through"], s["status"], s["text"]) for s in values["summary_log"]]


def resume_and_check(db: Path, out: Path, reference: dict[str, Any]) -> dict[str, Any]:
    """Resume thread ``k`` to its end and check it against the plan and the uninterrupted run."""
    result = cli("resume", "k", "--db", str(db), "--output", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "resuming debate k at" in result.stderr  # it really had stopped part-way
    values = json.loads(out.read_text())
    ids = [t["id"] for t in values["transcript"]]
    assert ids == EXPECTED_IDS
    assert len(set(ids)) == len(ids), "a turn was recorded twice"
    assert [t["seq"] for t in values["transcript"]] == list(range(TOTAL))
    assert transcript_key(values) == transcript_key(reference)
    assert summary_key(values) == summary_key(reference)
    assert values["solution"] == reference["solution"]
    status, whole = values["status"], reference["status"]
    assert (status["phase"], status["round"], status["turns"]) == ("done", ROUNDS, TOTAL)
    assert (status["summaries"], status["tokens"]) == (whole["summaries"], whole["tokens"])
    return values


def list_rows(db: Path) -> dict[str, list[str]]:
    result = cli("list", "--db", str(db))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split("\t") == ["thread", "updated", "status", "round", "phase", "turns", "tokens", "cost",
                                     "problem"]
    return {cells[0]: cells for cells in (line.split("\t") for line in lines[1:])}


def section_lines(stderr: str, header: str, word: str) -> list[str]:
    """Progress lines containing ``word`` under the phase header ``header`` (up to the next header)."""
    found, inside = [], False
    for line in stderr.splitlines():
        if line.startswith("[round "):
            inside = line.strip() == header
        elif inside and word in line:
            found.append(line.strip())
    return found


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
            result = cli("run", *key, "--thread-id", "w", "--db", str(folder / "w.sqlite"), "--output", str(out),
                         "--quiet", "p")
            assert result.returncode == 0, result.stderr
            values = json.loads(out.read_text())
            assert [t["id"] for t in values["transcript"]] == EXPECTED_IDS
            if "--context-window" in key:  # the small window must really make the resumed run redo a summary
                assert [(s["agent_id"], s["status"]) for s in values["summary_log"]] == [("judge", "ok")]
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
    assert row[2:6] + row[8:] == ["interrupted", "1/2", "propose", "3", "p"]
    assert int(row[6]) > 0 and row[7] == "$0.0000"  # the spend so far: the fake model is free

    resume_and_check(db, tmp_path / "out.json", reference(SLOW))
    assert list_rows(db)["k"][2:6] + list_rows(db)["k"][8:] == ["done", "2/2", "done", "22", "p"]


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
    args = ["run", "--protocol", "roundtable", "--turns", "40", "--agents", "architect,kiss", "--model",
            "fake:words=120,summary_latency_ms=30000", *SMALL, "--verbose", "--thread-id", "k", "--db", str(db), "p"]
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


# --------------------------------------------------------------------------- 3. finished calls are not re-run


@pytest.fixture(scope="module")
def stopped_against_server(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Against a loopback OpenAI-compatible server that records every request:

    an uninterrupted debate; then the same debate whose 6th call (the 3rd critique) hangs,
    stopped by SIGINT while it hangs, and resumed.
    """
    folder = tmp_path_factory.mktemp("server")
    args = ["--model", "openai:test-model", *TEAM]
    with OpenAIServer(words=40, hang_s=60) as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url)
        whole = cli("run", *args, "--thread-id", "w", "--db", str(folder / "w.sqlite"), "--quiet", "p", env=env)
        assert whole.returncode == 0, whole.stderr
        whole_prompts = server.prompts()
        server.requests.clear()

        server.faults.extend([None] * 5 + ["hang"])  # 3 proposals and 2 critiques answer; the 3rd critique hangs
        db = folder / "k.sqlite"
        with background("run", *args, "--verbose", "--thread-id", "k", "--db", str(db), "p", log=folder / "run.err",
                        env=env) as process:
            wait_for(process, lambda: len(server.requests) >= 6 and finished_calls(db) >= 5, "the 6th request",
                     folder / "run.err")
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=STOP_WAIT_S)
        first_prompts = server.prompts()
        server.requests.clear()

        resumed = cli("resume", "k", "--db", str(db), "--verbose", env=env)
        assert resumed.returncode == 0, resumed.stderr
        return {
            "code": code, "whole": whole_prompts, "first": first_prompts, "resumed": server.prompts(),
            "first_err": (folder / "run.err").read_text(), "resumed_err": resumed.stderr,
        }


def test_a_resumed_run_sends_only_the_calls_that_had_not_finished(stopped_against_server: dict[str, Any]) -> None:
    run = stopped_against_server
    assert run["code"] == 130
    first, resumed, whole = run["first"], run["resumed"], run["whole"]
    assert len(first) == 6
    assert first == whole[:6]  # same debate, same order (max-concurrency 1)
    answered, hung = first[:5], first[5]
    assert not set(answered) & set(resumed), "a call that had finished was sent again"
    assert resumed.count(hung) == 1  # the call cut off is made again, once
    # together the two runs sent exactly what one uninterrupted run sends
    assert Counter(answered) + Counter(resumed) == Counter(whole)
    assert len(resumed) == len(whole) - 5


def test_resume_progress_reports_only_the_critiques_that_had_not_finished(
    stopped_against_server: dict[str, Any],
) -> None:
    """Each call is announced when it finishes, so the stopped run showed the 2 critiques that finished
    and the resumed run shows only the other 4: 6 in all, none twice (the cut-off call never finished)."""
    header = "[round 1/2] critique"
    before = section_lines(stopped_against_server["first_err"], header, "critique done")
    after = section_lines(stopped_against_server["resumed_err"], header, "critique done")
    pairs = [f"{a} on {b}" for a in AGENTS for b in AGENTS if a != b]  # the plan's order, one call at a time
    assert [line.split(":")[0] for line in before] == pairs[:2], before
    assert sorted(line.split(":")[0] for line in after) == sorted(pairs[2:]), after


# --------------------------------------------------------------------------- 4. one process per thread


def test_a_second_process_on_a_running_thread_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    slow = ["--model", "fake:latency_ms=700,words=40", *TEAM]  # 22 calls: about 15 s, far longer than the checks
    with background("run", *slow, "--thread-id", "k", "--db", str(db), "p", log=tmp_path / "run.err") as process:
        wait_for(process, lambda: checkpoints(db) >= 2, "the set-up checkpoint", tmp_path / "run.err")  # input + setup: status exists
        env = cli_env()
        lister = subprocess.Popen([*debate_command(), "list", "--db", str(db)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
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


# --------------------------------------------------------------------------- 5. property: any stop point


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


# --------------------------------------------------------------------------- the module entry point


def test_python_dash_m_reports_a_missing_thread_like_the_script(tmp_path: Path) -> None:
    """``python -m debate_engine.app.cli`` must map errors to exit codes exactly as the ``debate`` script does."""
    db = tmp_path / "d.sqlite"
    result = subprocess.run([sys.executable, "-m", "debate_engine.app.cli", "resume", "nope", "--db", str(db)],
                            capture_output=True, text=True, timeout=120, env=cli_env())
    assert "Traceback" not in result.stderr, result.stderr[-1500:]
    assert result.returncode == 2
    assert "no debate 'nope'" in result.stderr
