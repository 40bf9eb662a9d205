"""Three ``debate run`` processes on one SQLite database share one rate-limit budget and lose no turn.

The loopback server (``tests/support/limited_server.py``) holds its model to 4 requests and 3,000 tokens a
second and counts what it refused. Each process alone keeps to the limits; three of them would each spend the
whole budget unless their buckets live in the database they share (``app.store.shared_limits``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.debate_cli import cli_env, debate_command
from tests.support.limited_server import LimitedServer, complete, debate_config

pytestmark = pytest.mark.integration
RATES = {"rpm": 4, "tpm": 3000}


@pytest.fixture
def server() -> Iterator[LimitedServer]:
    with LimitedServer(**RATES) as srv:
        yield srv


def three_runs(server: LimitedServer, tmp_path: Path, limits: dict[str, Any] | None) -> list[Any]:
    """Run three debates as three processes at once on one database; return each one's exit and final state."""
    env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-processes")
    config, db = str(debate_config(tmp_path, limits)), str(tmp_path / "debates.sqlite")
    runs = []
    for i in range(3):
        out = tmp_path / f"run-{i}.json"
        args = ["run", "Design a rate limiter", "--config", config, "--db", db, "--no-summary"]
        args += ["--thread-id", f"p{i}", "--output", str(out), "--quiet", "--timeout", "60"]
        process = subprocess.Popen(
            [*debate_command(), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        runs.append((process, out))
    done = []
    for process, out in runs:
        _, err = process.communicate(timeout=240)
        done.append((process.returncode, json.loads(out.read_text()) if out.exists() else err))
    return done


def test_three_processes_on_one_database_keep_to_the_limits_and_lose_no_turn(
    server: LimitedServer, tmp_path: Path
) -> None:
    done = three_runs(server, tmp_path, RATES)
    assert [code for code, _ in done] == [0, 0, 0], done
    assert all(complete(values) for _, values in done)
    assert server.refused_total() == 0, server.refused
    assert len(server.admitted) == 3 * 7, "a request was asked twice, or a turn is missing"


def test_without_the_limits_the_same_three_processes_walk_into_the_server_s(
    server: LimitedServer, tmp_path: Path
) -> None:
    """The control: the server refuses (the road then retries after its Retry-After)."""
    three_runs(server, tmp_path, None)
    assert server.refused_total() > 0
