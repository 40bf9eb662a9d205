"""Three ``debate run`` processes on one SQLite database share one rate-limit budget and lose no turn.

The loopback server (``tests/support/limited_server.py``) holds its model to 4 requests and 3,000 tokens a
second and counts what it refused. Each process alone keeps to the limits; three of them would each spend the
whole budget unless their buckets live in the database they share (``app.store.shared_limits``). With no limits,
they wait out every 429 together and still finish; a run waiting for its limit shows in ``debate list``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from debate_engine.app.viewer import create_app
from tests.support.debate_cli import background, cli, cli_env, debate_command, wait_for
from tests.support.limited_server import (
    MODEL,
    LimitedServer,
    charged,
    complete,
    debate_config,
    stored_debates,
)

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
        # a problem of its own, so that a retry is told from another process's request by what it asks
        problem = f"Design a rate limiter for service {i}"
        args = ["run", problem, "--config", config, "--db", db, "--no-summary"]
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


def test_without_the_limits_three_processes_wait_out_every_429_and_finish_charged_for_none(
    server: LimitedServer, tmp_path: Path
) -> None:
    """Test (d) across processes: they walk into the server's limit, each refused request is asked again only
    after its Retry-After (the model paused in the database they share), and every debate finishes whole,
    charged exactly what the server answered."""
    done = three_runs(server, tmp_path, None)
    assert server.refused_total() > 0, "the server refused nothing: the test shows nothing"
    assert [code for code, _ in done] == [0, 0, 0], done
    assert server.retried_early() == [], "a refused request was asked again before its Retry-After"
    debates = stored_debates(tmp_path / "debates.sqlite")
    assert len(debates) == 3 and all(complete(v) for v in debates.values())
    requests, tokens = (sum(c) for c in zip(*map(charged, debates.values()), strict=True))
    assert (requests, tokens) == (len(server.admitted), server.usage_total()) == (21, tokens)


def test_a_run_waiting_for_its_limit_shows_in_debate_list_with_its_model_and_seconds(
    tmp_path: Path,
) -> None:
    """One request per 30 s: the run's second request waits, and `debate list` in another process says so."""
    with LimitedServer() as open_server:
        env = cli_env(OPENAI_BASE_URL=open_server.base_url, OPENAI_API_KEY="sk-test-processes")
        config, db = (
            str(debate_config(tmp_path, {"rpm": 1}, period_s=30)),
            str(tmp_path / "d.sqlite"),
        )
        args = ["run", "Design a queue", "--config", config, "--db", db, "--thread-id", "slow"]
        log = tmp_path / "run.log"
        with background(*args, "--no-summary", log=log, env=env) as run:

            def listed() -> list[str] | None:
                rows = cli("list", "--db", db, env=env).stdout.splitlines()
                return next((r.split("\t") for r in rows if r.startswith("slow\t")), None)

            wait_for(
                run, lambda: "waiting" in "".join(listed() or []), "the run listed as waiting", log
            )
            row = listed()
            found = json.loads(cli("list", "--json", "--db", db, env=env).stdout.splitlines()[0])
            with TestClient(
                create_app(db)
            ) as viewer:  # the viewer says so too, read from the store
                page = viewer.get("/debates/slow").text
            run.send_signal(signal.SIGINT)
    assert row is not None and row[2].startswith("running, waiting ")
    assert row[2].endswith(f"for {MODEL}'s rate limit")
    assert found["waiting"]["model"] == MODEL and 0 < found["waiting"]["seconds"] <= 30
    assert re.search(rf"waiting \d+ s for {re.escape(MODEL)}'s rate limit", page), page
