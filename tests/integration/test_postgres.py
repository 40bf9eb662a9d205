"""The PostgreSQL checkpointer against a real server that the test starts and stops.

Needs Debian's `postgresql` package (`.ci/run` installs it); skips with the
reason where it is missing.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from debate_engine.providers.local_server import free_port

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def _as_postgres(*cmd: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    pytest.importorskip("langgraph.checkpoint.postgres", reason="needs `pip install -e '.[postgres]'`")
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found or (os.geteuid() == 0 and not shutil.which("runuser")):
        pytest.skip("PostgreSQL server binaries are not installed (apt-get install postgresql)")
    bindir = Path(found[-1]).parent
    data = tempfile.mkdtemp(prefix="debate-pg-")
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        _as_postgres(str(bindir / "initdb"), "-D", data, "-A", "trust", "-U", "postgres"),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        _as_postgres(
            str(bindir / "pg_ctl"),
            "-D",
            data,
            "-o",
            f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
            "-w",
            "start",
            "-l",
            f"{data}/log",
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres(str(bindir / "pg_ctl"), "-D", data, "-m", "fast", "stop"), capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def test_a_debate_runs_lists_and_shows_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "debate_engine.app.cli", *args, "--db", postgres_url],
            capture_output=True,
            text=True,
            timeout=120,
        )

    run = cli(
        "run", "--model", "fake", "--agents", "kiss,security", "--rounds", "2", "--thread-id", "pg1", "Design a cache"
    )
    assert run.returncode == 0, run.stderr
    listed = cli("list")
    assert "pg1\t" in listed.stdout and "done\t2/2" in listed.stdout
    out = tmp_path / "s.json"
    shown = cli("show", "pg1", "--output", str(out))
    assert shown.returncode == 0, shown.stderr
    state = json.loads(out.read_text())
    assert len(state["transcript"]) == (2 + 2 + 2) + (2 + 2) + 1 and state["solution"]
