"""Many debates on many worker processes sharing one real PostgreSQL server, surviving a dead worker.

Every test drives the real ``debate`` command in subprocesses against a
server the session starts on loopback (tests/integration/conftest.py). The
expected transcripts come from uninterrupted in-memory runs of the same
debates (the fake model's reply depends on the prompt only, never on the
latency), and the expected turn ids are written out from the protocol.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from tests.support.openai_server import OpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

AGENTS = ["kiss", "security"]
WORDS = 30
STALL_S = 5  # hand-over bound: 5 + 1 + 1 = 7 s; long enough to see the dead worker's jobs before the sweep
ROOT = Path(__file__).resolve().parents[2]


def expected_ids(rounds: int) -> list[str]:
    """A two-agent debate's turn ids, in order, from the protocol."""
    a, b = AGENTS
    ids = [f"proposal:r1:{a}", f"proposal:r1:{b}"]
    for r in range(1, rounds + 1):
        ids += [f"critique:r{r}:{a}->{b}", f"critique:r{r}:{b}->{a}", f"refinement:r{r}:{a}", f"refinement:r{r}:{b}"]
    return [*ids, f"synthesis:r{rounds}:judge"]


def same(turn: dict[str, Any]) -> tuple[Any, ...]:
    """What an interrupted debate must reproduce exactly: all but the model spec and the timings."""
    return tuple(json.dumps(turn.get(k), sort_keys=True) for k in
                 ("seq", "id", "kind", "round", "speaker", "role", "target", "content", "tokens", "usage", "view"))


def uninterrupted(debates: list[tuple[str, int]], **context: Any) -> list[list[dict[str, Any]]]:
    """The transcripts of the same debates run in memory without any interruption (no latency)."""
    graph = compile_debate()

    async def one(i: int, problem: str, rounds: int) -> list[dict[str, Any]]:
        config: Any = {"configurable": {"thread_id": f"u{i}"}}
        ctx = Context(agents=",".join(AGENTS), rounds=rounds, **context)
        return (await graph.ainvoke({"problem": problem}, config, context=ctx))["transcript"]

    async def every() -> list[list[dict[str, Any]]]:
        return list(await asyncio.gather(*(one(i, p, r) for i, (p, r) in enumerate(debates))))

    return asyncio.run(every())


def stored(url: str, threads: list[str]) -> dict[str, dict[str, Any]]:
    """Each thread's final values, read from the shared database."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        graph = compile_debate(checkpointer=saver)
        return {t: graph.get_state({"configurable": {"thread_id": t}}).values for t in threads}


# --------------------------------------------------------------------------- processes


def debate_command() -> list[str]:
    script = Path(sys.executable).parent / "debate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "debate_engine.app.cli"]


def cli_env(**extra: str) -> dict[str, str]:
    drop = {"DEBATE_MODEL", "DEBATE_DB", "OPENAI_BASE_URL", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(OPENAI_API_KEY="", LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def cli(url: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*debate_command(), *args, "--db", url], capture_output=True, text=True,
                          timeout=timeout, env=env or cli_env())


@contextmanager
def workers(url: str, names: list[str], folder: Path, *extra: str, env: dict[str, str] | None = None
            ) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Start ``debate worker`` processes (stderr in ``folder/NAME.log``); all are gone afterwards."""
    with ExitStack() as stack:
        procs = {}
        for name in names:
            log = stack.enter_context(open(folder / f"{name}.log", "w"))
            procs[name] = subprocess.Popen(
                [*debate_command(), "worker", "--name", name, "--stall-timeout", str(STALL_S), *extra, "--db", url],
                stdout=subprocess.DEVNULL, stderr=log, text=True, env=env or cli_env())
        try:
            yield procs
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=30)


def jobs(url: str) -> dict[str, dict[str, str]]:
    """``debate jobs`` as rows keyed by thread."""
    result = cli(url, "jobs")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = lines[0].split("\t")
    assert header == ["thread", "state", "worker", "attempts", "progress", "error"]
    return {row[0]: dict(zip(header, row, strict=True)) for row in (line.split("\t") for line in lines[1:])}


def turns_of(row: dict[str, str]) -> int:
    return int(row["progress"].rsplit(", ", 1)[1].split()[0]) if "turns" in row["progress"] else 0


def wait_until(ready: Callable[[], Any], what: str, procs: dict[str, subprocess.Popen[str]], limit_s: float = 90) -> Any:
    """Poll until ``ready()`` returns something true; fail (never hang) if a worker died or time ran out."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        found = ready()
        if found:
            return found
        dead = [n for n, p in procs.items() if p.poll() is not None]
        assert not dead, f"workers {dead} ended while waiting for {what}"
        time.sleep(0.2)
    pytest.fail(f"no {what} within {limit_s} s")


def submit_file(url: str, tmp_path: Path, debates: list[tuple[str, int]], names: list[str], *options: str) -> None:
    path = tmp_path / "problems.jsonl"
    path.write_text("".join(json.dumps({"problem": p, "thread_id": t, "rounds": r}) + "\n"
                            for t, (p, r) in zip(names, debates, strict=True)))
    result = cli(url, "submit", "--problems", str(path), "--agents", ",".join(AGENTS), *options)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == names


def check_transcripts(url: str, names: list[str], debates: list[tuple[str, int]]) -> dict[str, dict[str, Any]]:
    values = stored(url, names)
    expected = uninterrupted(debates, model=f"fake:words={WORDS}")
    for name, (_, rounds), want in zip(names, debates, expected, strict=True):
        got = values[name]["transcript"]
        ids = [t["id"] for t in got]
        assert ids == expected_ids(rounds), name
        assert len(set(ids)) == len(ids), f"{name}: a turn twice"
        assert [same(t) for t in got] == [same(t) for t in want], f"{name} differs from an uninterrupted run"
        assert values[name]["solution"], name
    return values


# --------------------------------------------------------------------------- tests


def test_twenty_debates_on_three_workers_survive_a_sigkilled_worker(postgres_url: str, tmp_path: Path) -> None:
    debates = [(f"Design service_{i}.py for {100 * (i + 1)} rps", 2 + i % 3) for i in range(20)]
    names = [f"w{i:02d}" for i in range(20)]
    submit_file(postgres_url, tmp_path, debates, names, "--model", f"fake:latency_ms=250,words={WORDS}")
    with workers(postgres_url, ["a", "b", "c"], tmp_path, "--concurrency", "2") as procs:
        # Kill worker "a" while it is inside a debate: some turns written, the debate not finished.
        wait_until(lambda: any(r["worker"] == "a" and r["state"] == "running" and turns_of(r) > 0
                               for r in jobs(postgres_url).values()), "debate mid-way on worker a", procs)
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(timeout=30)
        # Its debates stay 'running' on the dead worker until the sweep, STALL_S later.
        orphans = {t: r for t, r in jobs(postgres_url).items() if r["worker"] == "a" and r["state"] == "running"}
        assert orphans and any(turns_of(r) > 0 for r in orphans.values()), orphans
        alive = {n: p for n, p in procs.items() if n != "a"}
        waited = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
        assert waited.returncode == 0, waited.stderr
        assert all(p.poll() is None for p in alive.values()), "a surviving worker died"
    rows = jobs(postgres_url)
    assert sorted(rows) == names and {r["state"] for r in rows.values()} == {"done"}
    for thread in orphans:
        assert int(rows[thread]["attempts"]) >= 2, rows[thread]  # run once on "a", then again elsewhere
    logs = (tmp_path / "b.log").read_text() + (tmp_path / "c.log").read_text()
    started_again = [t for t, r in orphans.items() if turns_of(r) > 0]
    for thread in started_again:
        assert f"] {thread}: continuing at round" in logs, f"{thread} did not continue from its checkpoint"
    check_transcripts(postgres_url, names, debates)


def test_sigterm_hands_running_debates_back_and_another_worker_finishes_them(postgres_url: str, tmp_path: Path) -> None:
    # Long debates (18 phases of 0.5 s) so that listing and a refused resume happen while they run.
    debates = [(f"Design a rate limiter for gateway_{i}.py", 8) for i in range(3)]
    names = [f"term{i}" for i in range(3)]
    submit_file(postgres_url, tmp_path, debates, names, "--model", f"fake:latency_ms=500,words={WORDS}")
    with workers(postgres_url, ["first"], tmp_path, "--concurrency", "3") as procs:
        wait_until(lambda: all(r["state"] == "running" and turns_of(r) > 0
                               for t, r in jobs(postgres_url).items() if t in names), "three debates mid-way", procs)
        # Another process sees each thread as running (the advisory lock) and may not run it beside the worker.
        listed = cli(postgres_url, "list")
        assert all(f"{name}\t" in listed.stdout for name in names)
        assert [line.split("\t")[2] for line in listed.stdout.splitlines()[1:]
                if line.split("\t")[0] in names] == ["running"] * 3
        refused = cli(postgres_url, "resume", names[0])
        assert refused.returncode == 2 and "running in another process" in refused.stderr
        procs["first"].send_signal(signal.SIGTERM)
        assert procs["first"].wait(timeout=30) == 0
    rows = jobs(postgres_url)
    assert {rows[n]["state"] for n in names} == {"queued"}, rows
    assert [line for line in (tmp_path / "first.log").read_text().splitlines() if "handed back" in line]
    with workers(postgres_url, ["second"], tmp_path, "--concurrency", "3") as procs:
        waited = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
        assert waited.returncode == 0, waited.stderr
    log = (tmp_path / "second.log").read_text()
    assert all(f"] {n}: continuing at round" in log for n in names), log
    check_transcripts(postgres_url, names, debates)


def test_failed_debates_keep_their_turns_and_resume_or_a_resubmit_continues_them(
    postgres_url: str, tmp_path: Path
) -> None:
    team = ["--model", "openai:test-model", "--agents", ",".join(AGENTS), "--rounds", "1", "--max-concurrency", "1"]
    kept = {}
    with OpenAIServer(words=20) as server:
        env = cli_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url)
        server.always = "500"  # every request fails, past the client's retries ...
        with workers(postgres_url, ["w"], tmp_path, env=env):
            for thread in ("flaky", "flaky2"):  # ... but the two proposals of each debate, one debate at a time
                server.faults.extend([None, None])
                submitted = cli(postgres_url, "submit", *team, "--thread-id", thread, "Design a lock", env=env)
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
            again = cli(postgres_url, "submit", "--thread-id", "flaky2", env=env)  # its id alone: continue it
            assert again.returncode == 0 and again.stdout.split() == ["flaky2"], again.stderr
            done = cli(postgres_url, "jobs", "--wait", "--interval", "0.5", timeout=300)
            assert done.returncode == 0, done.stderr
    for thread, before in kept.items():
        final = stored(postgres_url, [thread])[thread]["transcript"]
        assert [t["id"] for t in final] == expected_ids(1)
        assert [same(t) for t in final[:2]] == [same(t) for t in before]  # finished turns kept, not redone
    refused = cli(postgres_url, "submit", "--thread-id", "flaky", env=env)
    assert refused.returncode == 2 and "already holds a finished debate" in refused.stderr


def test_a_queued_roundtable_runs_as_a_roundtable_and_a_resubmit_continues_one_on_its_own_protocol(
    postgres_server: str, tmp_path: Path
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    from debate_engine import RoundtableContext, compile_roundtable
    from tests.integration.conftest import fresh_database

    url = fresh_database(postgres_server)  # its own queue: `jobs --wait` waits for these debates only
    team = ["--agents", ",".join(AGENTS), "--model", f"fake:words={WORDS}"]
    with PostgresSaver.from_conn_string(url) as saver:  # a roundtable stopped after setup, outside the queue
        saver.setup()
        compile_roundtable(checkpointer=saver, interrupt_before=["turn"]).invoke(
            {"problem": "Design a lock"}, {"configurable": {"thread_id": "rt-stopped"}},
            context=RoundtableContext(agents=",".join(AGENTS), model=f"fake:words={WORDS}", turns=4))
    queued = cli(url, "submit", "--protocol", "roundtable", "--turns", "3", *team, "--thread-id", "rt-new",
                 "Design a cache")
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


def test_workers_started_together_on_an_empty_database_all_come_up(postgres_server: str, tmp_path: Path) -> None:
    from tests.integration.conftest import fresh_database

    url = fresh_database(postgres_server)  # no tables yet: every worker tries to create them at once
    with workers(url, ["x", "y", "z"], tmp_path) as procs:
        wait_until(lambda: all("running up to" in (tmp_path / f"{n}.log").read_text() for n in procs),
                   "all three workers ready", procs, limit_s=60)
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        assert [proc.wait(timeout=30) for proc in procs.values()] == [0, 0, 0]
    result = cli(url, "jobs")
    assert result.returncode == 0 and "no debates queued yet" in result.stderr


def test_langgraph_dockerfile_is_generated_offline_from_langgraph_json(tmp_path: Path) -> None:
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    cli_path = Path(sys.executable).parent / "langgraph"
    assert cli_path.exists(), "langgraph-cli is a dev dependency"
    env = cli_env(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY="")  # no network
    target = tmp_path / "Dockerfile"
    result = subprocess.run([str(cli_path), "dockerfile", "-c", str(ROOT / "langgraph.json"), str(target)],
                            capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    text = target.read_text()
    assert text.startswith("FROM langchain/langgraph-api")
    served = json.loads(next(line for line in text.splitlines() if line.startswith("ENV LANGSERVE_GRAPHS="))
                        .split("=", 1)[1].strip("'"))
    folder = f"/deps/{ROOT.name}"
    assert f"ADD . {folder}" in text
    assert served == {name: folder + spec.removeprefix(".") for name, spec in graphs.items()}
