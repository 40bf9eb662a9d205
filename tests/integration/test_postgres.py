"""The PostgreSQL checkpointer against a real server that the test starts and stops.

The server comes from the ``postgres_url`` fixture in ``conftest.py`` (Debian's
`postgresql` binaries, which `.ci/run` installs); a missing server fails CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_a_debate_runs_lists_and_shows_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "debate_engine.app.cli.main", *args, "--db", postgres_url],
            capture_output=True,
            text=True,
            timeout=120,
        )

    run = cli(
        "run",
        "--model",
        "fake",
        "--agents",
        "kiss,security",
        "--rounds",
        "2",
        "--thread-id",
        "pg1",
        "Design a cache",
    )
    assert run.returncode == 0, run.stderr
    listed = cli("list")
    assert "pg1\t" in listed.stdout and "done\t2/2" in listed.stdout
    out = tmp_path / "s.json"
    shown = cli("show", "pg1", "--output", str(out))
    assert shown.returncode == 0, shown.stderr
    state = json.loads(out.read_text())
    assert len(state["transcript"]) == (2 + 2 + 2) + (2 + 2) + 1 and state["solution"]


def test_processes_opening_a_fresh_database_at_once_migrate_it_one_at_a_time(
    postgres_server: str,
) -> None:
    """Two savers migrating together collide on the migrations' keys (UniqueViolation): a worker started beside
    a queued command died of it. Six processes open one fresh database at the same moment."""
    from tests.integration.conftest import fresh_database

    url = fresh_database(postgres_server)
    script = (
        "import asyncio, sys\nfrom debate_engine.app.store.database import open_checkpointer\n"
        "async def main():\n    async with open_checkpointer(sys.argv[1]):\n        pass\n"
        "asyncio.run(main())\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, url], stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    failures = [err for p in procs if (err := p.communicate(timeout=120)[1]) and p.returncode != 0]
    assert failures == [], failures[0][-800:] if failures else ""
