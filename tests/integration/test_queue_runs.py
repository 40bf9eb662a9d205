"""``debate compare --queue`` and ``debate fork --variants --queue``: the runs go to ``debate worker``s.

Real PostgreSQL on loopback (tests/integration/conftest.py), real worker subprocesses, the fake model. Each
queued command must give what the same command gives in-process, and every run must have been run by a worker.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.debate_cli import cli as local_cli
from tests.support.worker_runs import cli, jobs, workers

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

MODEL = "fake:solve=0.6,conform=0.5,latency_ms=50"
COMPARE = [
    "compare",
    "builtin:arithmetic:6",
    "--model",
    MODEL,
    "--protocols",
    "single,vote,debate",
    "--seeds",
    "1",
]


def figures(path: Path) -> dict[str, Any]:
    """Return a comparison's JSON without its wall times (what the machine, not the runs, decides)."""
    found = json.loads(path.read_text())
    for item in (*found["protocols"], *found["runs"]):
        item.pop("wall_s", None)
        item.pop("wall_s_per_task", None)
    return found


def test_a_queued_comparison_finishes_on_two_workers_with_the_in_process_figures(
    postgres_url: str, tmp_path: Path
) -> None:
    here = local_cli(
        *COMPARE, "--db", str(tmp_path / "c.sqlite"), "--output", str(tmp_path / "here.json")
    )
    assert here.returncode == 0, here.stderr
    with workers(postgres_url, ["a", "b"], tmp_path, "--concurrency", "2") as procs:
        queued = cli(
            postgres_url,
            *COMPARE,
            "--queue",
            "--output",
            str(tmp_path / "queued.json"),
            timeout=300,
        )
        assert queued.returncode == 0, queued.stderr
        assert all(p.poll() is None for p in procs.values())
    assert figures(tmp_path / "queued.json") == figures(tmp_path / "here.json")
    threads = [r["thread"] for r in figures(tmp_path / "queued.json")["runs"]]
    rows = {
        t: r for t, r in jobs(postgres_url).items() if t.startswith("compare:")
    }  # the module's database
    assert sorted(rows) == sorted(threads) and {r["state"] for r in rows.values()} == {"done"}
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in ("a", "b")}
    for thread in threads:
        assert sum(f"] {thread}: done" in log for log in logs.values()) == 1, thread
    assert all(re.search(r"\] compare:\S+: done", log) for log in logs.values()), (
        "a worker ran no run"
    )
    # The same command again reads every run back: nothing is queued, no worker is needed.
    again = cli(postgres_url, *COMPARE, "--queue", "--output", str(tmp_path / "again.json"))
    assert again.returncode == 0 and "on the queue" not in again.stderr, again.stderr
    assert figures(tmp_path / "again.json") == figures(tmp_path / "here.json")


def test_a_comparison_on_postgresql_without_queue_runs_in_process(
    postgres_server: str, tmp_path: Path
) -> None:
    from tests.integration.conftest import fresh_database

    url = fresh_database(postgres_server)
    command = [
        "compare",
        "builtin:arithmetic:2",
        "--model",
        MODEL,
        "--protocols",
        "single,vote",
        "--votes",
        "3",
    ]
    on_postgres = cli(url, *command, "--output", str(tmp_path / "pg.json"))
    assert on_postgres.returncode == 0, on_postgres.stderr
    on_sqlite = local_cli(
        *command, "--db", str(tmp_path / "s.sqlite"), "--output", str(tmp_path / "s.json")
    )
    assert on_sqlite.returncode == 0, on_sqlite.stderr
    assert figures(tmp_path / "pg.json") == figures(tmp_path / "s.json")
    assert cli(url, "jobs").stderr.startswith("no debates queued yet")


def table(stdout: str) -> list[list[str]]:
    """Return the variants table's rows without the thread column."""
    rows = [
        [c.strip() for c in line.strip("|").split(" | ")]
        for line in stdout.splitlines()
        if line.startswith("| ")
    ]
    return [row[:1] + row[2:] for row in rows[1:]]


def test_fork_variants_on_the_queue_give_the_in_process_table(
    postgres_url: str, tmp_path: Path
) -> None:
    original = cli(
        postgres_url,
        "run",
        "--model",
        "fake",
        "--agents",
        "architect,security,kiss",
        "--rounds",
        "2",
        "--thread-id",
        "orig",
        "--quiet",
        "Design a rate limiter",
    )
    assert original.returncode == 0, original.stderr
    variants = [
        "fork",
        "orig",
        "--round",
        "1",
        "--variants",
        "model=fake;model=fake:words=30 agents=kiss,security",
    ]
    here = cli(postgres_url, *variants, "--thread-id", "here")
    assert here.returncode == 0, here.stderr
    with workers(postgres_url, ["w"], tmp_path) as procs:
        queued = cli(postgres_url, *variants, "--thread-id", "q", "--queue", timeout=300)
        assert queued.returncode == 0, queued.stderr
        assert procs["w"].poll() is None
    assert table(queued.stdout) == table(here.stdout) and len(table(here.stdout)) == 3
    assert "| yes |" in here.stdout or "| no |" in here.stdout
    rows = {
        t: r for t, r in jobs(postgres_url).items() if not t.startswith("compare:")
    }  # the module's database
    assert sorted(rows) == ["q-1", "q-2"] and {r["state"] for r in rows.values()} == {"done"}
    log = (tmp_path / "w.log").read_text()
    assert "] q-1: continuing at round" in log and "] q-2: continuing at round" in log
    again = cli(postgres_url, *variants, "--thread-id", "q", "--queue")
    assert again.returncode == 0 and table(again.stdout) == table(here.stdout), again.stderr
    assert "0 fork(s) on the queue" in again.stderr
