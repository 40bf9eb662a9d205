"""Many debates on many worker processes sharing one real PostgreSQL server, surviving a dead worker.

Every test drives the real ``debate`` command in subprocesses against a
server the session starts on loopback (tests/integration/conftest.py). The
expected transcripts come from uninterrupted in-memory runs of the same
debates, and the expected turn ids are written out from the protocol
(tests/support/worker_runs.py).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.worker_runs import (
    WORDS,
    check_transcripts,
    cli,
    jobs,
    submit_file,
    turns_of,
    wait_until,
    workers,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_twenty_debates_on_three_workers_survive_a_sigkilled_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    debates = [(f"Design service_{i}.py for {100 * (i + 1)} rps", 2 + i % 3) for i in range(20)]
    names = [f"w{i:02d}" for i in range(20)]
    submit_file(
        postgres_url, tmp_path, debates, names, "--model", f"fake:latency_ms=250,words={WORDS}"
    )
    with workers(postgres_url, ["a", "b", "c"], tmp_path, "--concurrency", "2") as procs:
        # Kill worker "a" while it is inside a debate: some turns written, the debate not finished.
        wait_until(
            lambda: any(
                r["worker"] == "a" and r["state"] == "running" and turns_of(r) > 0
                for r in jobs(postgres_url).values()
            ),
            "debate mid-way on worker a",
            procs,
        )
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(timeout=30)
        # Its debates stay 'running' on the dead worker until the sweep, STALL_S later.
        orphans = {
            t: r
            for t, r in jobs(postgres_url).items()
            if r["worker"] == "a" and r["state"] == "running"
        }
        assert orphans and any(turns_of(r) > 0 for r in orphans.values()), orphans
        alive = {n: p for n, p in procs.items() if n != "a"}
        waited = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
        assert waited.returncode == 0, waited.stderr
        assert all(p.poll() is None for p in alive.values()), "a surviving worker died"
    rows = jobs(postgres_url)
    assert sorted(rows) == names and {r["state"] for r in rows.values()} == {"done"}
    for thread in orphans:
        assert int(rows[thread]["attempts"]) >= 2, rows[
            thread
        ]  # run once on "a", then again elsewhere
    logs = (tmp_path / "b.log").read_text() + (tmp_path / "c.log").read_text()
    started_again = [t for t, r in orphans.items() if turns_of(r) > 0]
    for thread in started_again:
        assert f"] {thread}: continuing at round" in logs, (
            f"{thread} did not continue from its checkpoint"
        )
    check_transcripts(postgres_url, names, debates)


def test_sigterm_hands_running_debates_back_and_another_worker_finishes_them(
    postgres_url: str, tmp_path: Path
) -> None:
    # Long debates (18 phases of 0.5 s) so that listing and a refused resume happen while they run.
    debates = [(f"Design a rate limiter for gateway_{i}.py", 8) for i in range(3)]
    names = [f"term{i}" for i in range(3)]
    submit_file(
        postgres_url, tmp_path, debates, names, "--model", f"fake:latency_ms=500,words={WORDS}"
    )
    with workers(postgres_url, ["first"], tmp_path, "--concurrency", "3") as procs:
        wait_until(
            lambda: all(
                r["state"] == "running" and turns_of(r) > 0
                for t, r in jobs(postgres_url).items()
                if t in names
            ),
            "three debates mid-way",
            procs,
        )
        # Another process sees each thread as running (the advisory lock) and may not run it beside the worker.
        listed = cli(postgres_url, "list")
        assert all(f"{name}\t" in listed.stdout for name in names)
        assert [
            line.split("\t")[2]
            for line in listed.stdout.splitlines()[1:]
            if line.split("\t")[0] in names
        ] == ["running"] * 3
        refused = cli(postgres_url, "resume", names[0])
        assert refused.returncode == 2 and "running in another process" in refused.stderr
        procs["first"].send_signal(signal.SIGTERM)
        assert procs["first"].wait(timeout=30) == 0
    rows = jobs(postgres_url)
    assert {rows[n]["state"] for n in names} == {"queued"}, rows
    assert [
        line for line in (tmp_path / "first.log").read_text().splitlines() if "handed back" in line
    ]
    with workers(postgres_url, ["second"], tmp_path, "--concurrency", "3") as procs:
        waited = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
        assert waited.returncode == 0, waited.stderr
    log = (tmp_path / "second.log").read_text()
    assert all(f"] {n}: continuing at round" in log for n in names), log
    check_transcripts(postgres_url, names, debates)


def test_workers_started_together_on_an_empty_database_all_come_up(
    postgres_server: str, tmp_path: Path
) -> None:
    from tests.integration.conftest import fresh_database

    url = fresh_database(
        postgres_server
    )  # no tables yet: every worker tries to create them at once
    with workers(url, ["x", "y", "z"], tmp_path) as procs:
        wait_until(
            lambda: all("running up to" in (tmp_path / f"{n}.log").read_text() for n in procs),
            "all three workers ready",
            procs,
            limit_s=60,
        )
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        assert [proc.wait(timeout=30) for proc in procs.values()] == [0, 0, 0]
    result = cli(url, "jobs")
    assert result.returncode == 0 and "no debates queued yet" in result.stderr
