"""Failed and stopped debates in the worker queue keep their turns and continue: by resume, or by a resubmit
of their id, each on its own protocol. Against a real PostgreSQL server the session starts on loopback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.debate_cli import cli_env
from tests.support.openai_server import OpenAIServer
from tests.support.worker_runs import AGENTS, WORDS, cli, expected_ids, jobs, same, stored, workers

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_failed_debates_keep_their_turns_and_resume_or_a_resubmit_continues_them(
    postgres_url: str, tmp_path: Path
) -> None:
    team = [
        "--model",
        "openai:test-model",
        "--agents",
        ",".join(AGENTS),
        "--rounds",
        "1",
        "--max-concurrency",
        "1",
    ]
    kept = {}
    with OpenAIServer(words=20) as server:
        env = cli_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url)
        server.always = "500"  # every request fails, past the road's retries ...
        with workers(postgres_url, ["w"], tmp_path, env=env):
            for thread in (
                "flaky",
                "flaky2",
            ):  # ... but the two proposals of each debate, one debate at a time
                server.faults.extend([None, None])
                submitted = cli(
                    postgres_url, "submit", *team, "--thread-id", thread, "Design a lock", env=env
                )
                assert submitted.returncode == 0, submitted.stderr
                failed = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
                assert failed.returncode == 3, failed.stderr
                assert f"{thread}: the model provider failed" in failed.stderr
                kept[thread] = stored(postgres_url, [thread])[thread]["transcript"]
                assert [t["id"] for t in kept[thread]] == expected_ids(1)[:2]
            rows = jobs(postgres_url)
            assert [rows[t]["state"] for t in kept] == ["failed", "failed"]
            assert all(rows[t]["error"].startswith("the model provider failed") for t in kept)
            server.always = None
            resumed = cli(postgres_url, "resume", "flaky", "--quiet", env=env)
            assert resumed.returncode == 0, resumed.stderr
            again = cli(
                postgres_url, "submit", "--thread-id", "flaky2", env=env
            )  # its id alone: continue it
            assert again.returncode == 0 and again.stdout.split() == ["flaky2"], again.stderr
            done = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
            assert done.returncode == 0, done.stderr
    for thread, before in kept.items():
        final = stored(postgres_url, [thread])[thread]["transcript"]
        assert [t["id"] for t in final] == expected_ids(1)
        assert [same(t) for t in final[:2]] == [
            same(t) for t in before
        ]  # finished turns kept, not redone
    refused = cli(postgres_url, "submit", "--thread-id", "flaky", env=env)
    assert refused.returncode == 2 and "already holds a finished debate" in refused.stderr


def test_a_queued_roundtable_runs_as_a_roundtable_and_a_resubmit_continues_one_on_its_own_protocol(
    postgres_server: str, tmp_path: Path
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    from debate_engine import RoundtableContext, compile_roundtable
    from tests.integration.conftest import fresh_database

    url = fresh_database(
        postgres_server
    )  # its own queue: `jobs --wait` waits for these debates only
    team = ["--agents", ",".join(AGENTS), "--model", f"fake:words={WORDS}"]
    with PostgresSaver.from_conn_string(
        url
    ) as saver:  # a roundtable stopped after setup, outside the queue
        saver.setup()
        compile_roundtable(checkpointer=saver, interrupt_before=["turn"]).invoke(
            {"problem": "Design a lock"},
            {"configurable": {"thread_id": "rt-stopped"}},
            context=RoundtableContext(
                agents=",".join(AGENTS), model=f"fake:words={WORDS}", turns=4
            ),
        )
    queued = cli(
        url,
        "submit",
        "--protocol",
        "roundtable",
        "--turns",
        "3",
        *team,
        "--thread-id",
        "rt-new",
        "Design a cache",
    )
    assert queued.returncode == 0, queued.stderr
    other = cli(url, "submit", "--thread-id", "rt-stopped", "--protocol", "phase")
    assert other.returncode == 2 and "rt-stopped holds a roundtable" in other.stderr, other.stderr
    again = cli(url, "submit", "--thread-id", "rt-stopped")
    assert again.returncode == 0, again.stderr
    with workers(url, ["w"], tmp_path):
        done = cli(url, "jobs", "--wait", "--interval", "0.5", timeout=300)
        assert done.returncode == 0, done.stderr + (tmp_path / "w.log").read_text()
    values = stored(url, ["rt-new", "rt-stopped"])
    for thread, turns in (("rt-new", 3), ("rt-stopped", 4)):
        got = values[thread]
        assert got["settings"]["protocol"] == "roundtable", thread
        assert [t["kind"] for t in got["transcript"]] == ["message"] * turns + ["synthesis"], thread
        assert [t["speaker"] for t in got["transcript"][:turns]] == (AGENTS * turns)[:turns], thread
