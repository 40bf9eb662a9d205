"""A ``debate worker`` fleet on PostgreSQL shares one rate-limit budget, waits out every 429 together, leaks nothing.

Workers keep their buckets, pauses and waits in the debates' own PostgreSQL database (``app.store.postgres_limits``),
chosen by the same ``--db`` the queue uses. Against the loopback server that holds its model to 4 requests and
3,000 tokens a second and counts what it refused (``tests/support/limited_server.py``): (c) two workers with the
limits configured finish every debate, refused nothing, lost no turn; (d) with no limits, every 429 is waited out
and every debate still finishes, the refused requests charged nothing. Each test has a database of its own.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from debate_engine.app.store.postgres_limits import PostgresBuckets
from debate_engine.calls.buckets import Bucket
from tests.integration.conftest import fresh_database
from tests.support.debate_cli import cli_env
from tests.support.limited_server import LimitedServer, charged, complete, debate_config
from tests.support.worker_runs import cli, stored, wait_until, workers

pytestmark = [pytest.mark.integration, pytest.mark.postgres]
RATES = {"rpm": 4, "tpm": 3000}
THREADS = [f"fleet{i}" for i in range(4)]


@pytest.fixture
def url(postgres_server: str) -> str:
    """Return a fresh database: the queue, the checkpoints and the rate limits of one test alone."""
    return fresh_database(postgres_server)


@pytest.fixture
def server() -> Iterator[LimitedServer]:
    with LimitedServer(**RATES) as srv:
        yield srv


def submit(url: str, folder: Path, env: dict[str, str], stated: dict[str, Any] | None) -> None:
    """Queue four two-agent, one-round debates on the limited model, with ``stated`` as their ``rateLimits``."""
    problems = folder / "problems.jsonl"
    problems.write_text(
        "".join(
            json.dumps({"problem": f"Design a rate limiter for api_{i}", "thread_id": t}) + "\n"
            for i, t in enumerate(THREADS)
        )
    )
    config = str(debate_config(folder, stated))
    done = cli(
        url, "submit", "--problems", str(problems), "--config", config, "--no-summary", env=env
    )
    assert done.returncode == 0, done.stderr


def fleet(url: str, folder: Path, server: LimitedServer, stated: dict[str, Any] | None) -> Any:
    """Run the four debates on two workers of two debates each; return each thread's final values."""
    env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-fleet")
    submit(url, folder, env, stated)
    with workers(url, ["a", "b"], folder, "--concurrency", "2", env=env):
        waited = cli(url, "jobs", "--wait", "--interval", "0.5", timeout=300)
        assert waited.returncode == 0, waited.stderr
    logs = (folder / "a.log").read_text() + (folder / "b.log").read_text()
    assert "] fleet" in (folder / "a.log").read_text(), "worker a ran nothing: nothing was shared"
    assert "] fleet" in (folder / "b.log").read_text(), f"worker b ran nothing:\n{logs}"
    return stored(url, THREADS)


def test_two_workers_with_the_limits_configured_keep_to_them_together_and_lose_no_turn(
    url: str, server: LimitedServer, tmp_path: Path
) -> None:
    """Test (c): each worker alone keeps to the limits; two would each spend the whole budget unless their
    buckets live in the database they share."""
    values = fleet(url, tmp_path, server, RATES)
    assert all(complete(v) for v in values.values()), values
    assert server.refused_total() == 0, server.refused
    assert len(server.admitted) == 4 * 7, "a request was asked twice, or a turn is missing"


def test_two_workers_with_no_limits_wait_out_every_429_and_finish_charged_for_none(
    url: str, server: LimitedServer, tmp_path: Path
) -> None:
    """Test (d) across processes: the server refuses, each refused request is asked again only after its
    Retry-After (the model paused in the database for the whole fleet), and every debate finishes whole."""
    values = fleet(url, tmp_path, server, None)
    assert server.refused_total() > 0, "the server refused nothing: the test shows nothing"
    assert server.retried_early() == [], "a refused request was asked again before its Retry-After"
    assert all(complete(v) for v in values.values())
    assert len(server.admitted) == 4 * 7
    requests, tokens = (sum(c) for c in zip(*map(charged, values.values()), strict=True))
    assert (requests, tokens) == (len(server.admitted), server.usage_total())


def test_a_debate_waiting_on_a_worker_shows_in_debate_list_with_its_model_and_seconds(
    url: str, tmp_path: Path
) -> None:
    """One request per 30 s: the debate's second request waits on the worker, and `debate list` elsewhere says so."""
    with LimitedServer() as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-fleet")
        config = str(debate_config(tmp_path, {"rpm": 1}, period_s=30))
        done = cli(
            url, "submit", "Design a queue", "--config", config, "--thread-id", "slow", env=env
        )
        assert done.returncode == 0, done.stderr
        with workers(url, ["w"], tmp_path, env=env) as procs:
            row = wait_until(
                lambda: next(
                    (
                        line.split("\t")
                        for line in cli(url, "list", env=env).stdout.splitlines()
                        if line.startswith("slow\t") and "waiting" in line
                    ),
                    None,
                ),
                "the debate listed as waiting",
                procs,
            )
            listed = json.loads(cli(url, "list", "--json", env=env).stdout.splitlines()[0])
    assert row[2].startswith("running, waiting ") and "openai:limited's rate limit" in row[2]
    assert listed["waiting"]["model"] == "openai:limited" and 0 < listed["waiting"]["seconds"] <= 30


# --- the store itself ------------------------------------------------------------------------------------------


def test_stores_on_one_database_draw_on_one_bucket_and_see_one_pause(url: str) -> None:
    def opened() -> PostgresBuckets:
        return PostgresBuckets(url, clock=lambda: 100.0)

    one, two, bucket = opened(), opened(), Bucket("m:requests", "requests", 4.0, 2.0)
    try:
        assert [one.reserve([(bucket, 1.0)], "p", 60.0, 100.0) for _ in range(2)] == [
            (100.0, True)
        ] * 2
        assert two.reserve([(bucket, 1.0)], "p", 60.0, 100.0) == (100.5, True)  # after the two
        assert two.reserve([(bucket, 9.0)], "p", 0.5, 100.0)[1] is False, "taken past its wait"
        two.pause("p", 130.0)
        assert one.reserve([], "p", 60.0, 110.0) == (130.0, True)
        one.note_wait("run", "openai:limited", 125.0)
        assert two.waits() == {"run": ("openai:limited", 125.0)}
    finally:
        one.close()
        two.close()


def test_a_worker_killed_mid_take_or_holding_a_reservation_leaks_nothing(url: str) -> None:
    """Killed inside its transaction, a worker's lock goes with its connection; killed holding requests it never
    sent, its reservation drains away with the refill, like any level."""
    bucket = Bucket("m:requests", "requests", 4.0, 2.0)
    clock = [100.0]
    alive = PostgresBuckets(url, clock=lambda: clock[0])
    try:
        alive.reserve([(bucket, 1.0)], "p", 60.0, 100.0)  # the row exists
        killed = psycopg.connect(url, autocommit=True)
        killed.execute("BEGIN")
        killed.execute(
            "SELECT * FROM debate_rate_buckets WHERE name = %s FOR UPDATE", (bucket.name,)
        )
        got: list[Any] = []
        taking = threading.Thread(
            target=lambda: got.append(alive.reserve([(bucket, 1.0)], "p", 60.0, 100.0))
        )
        taking.start()
        time.sleep(0.3)
        assert not got, "the take did not wait for the row the other transaction holds"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (killed.info.backend_pid,))
        taking.join(timeout=30)
        assert got and got[0][1], "the take never got the row of the killed worker's transaction"
        # a worker that took eight requests (four of them waiting in line) and died before sending any
        dead = PostgresBuckets(url, clock=lambda: clock[0])
        sends = [dead.reserve([(bucket, 1.0)], "p", 60.0, 100.0)[0] for _ in range(8)]
        dead.close()
        assert max(sends) > 101.0
        clock[0] = max(sends) + bucket.limit / bucket.per_s  # one period after its last send
        assert alive.reserve([(bucket, 1.0)], "p", 60.0, clock[0]) == (clock[0], True)
    finally:
        alive.close()


def test_a_take_that_waited_for_another_workers_lock_past_its_deadline_is_not_taken(
    url: str,
) -> None:
    """The wait for the rows is part of the request's wait: counted from when it asked, not from the lock."""
    bucket = Bucket("m:requests", "requests", 4.0, 2.0)
    store = PostgresBuckets(url)
    try:
        assert store.reserve([(bucket, 1.0)], "p", 60.0, time.time())[1]  # the row exists
        holder = psycopg.connect(url, autocommit=True)
        holder.execute("BEGIN")
        holder.execute(
            "SELECT * FROM debate_rate_buckets WHERE name = %s FOR UPDATE", (bucket.name,)
        )
        got: list[Any] = []
        asked = time.time()
        taking = threading.Thread(
            target=lambda: got.append(store.reserve([(bucket, 1.0)], "p", 0.5, asked))
        )
        taking.start()
        time.sleep(1.5)  # the other worker holds the row past the request's half-second
        holder.execute("ROLLBACK")
        holder.close()
        taking.join(timeout=30)
        assert got and got[0][1] is False, got
        assert store.reserve([(bucket, 1.0)], "p", 0.5, time.time())[
            1
        ]  # nothing taken by the late one
    finally:
        store.close()
