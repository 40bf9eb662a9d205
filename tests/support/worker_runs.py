"""Run debates on ``debate worker`` processes sharing one PostgreSQL database, and check what they stored.

The expected transcripts come from uninterrupted in-memory runs of the same debates (the fake model's reply
depends on the prompt only, never on the latency), and the expected turn ids are written out from the protocol.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from tests.support.debate_cli import cli_env, debate_command

AGENTS = ["kiss", "security"]
WORDS = 30
STALL_S = 5  # hand-over bound: 5 + 1 + 1 = 7 s; long enough to see the dead worker's jobs before the sweep


def expected_ids(rounds: int) -> list[str]:
    """Return a two-agent debate's turn ids, in order, from the protocol."""
    a, b = AGENTS
    ids = [f"proposal:r1:{a}", f"proposal:r1:{b}"]
    for r in range(1, rounds + 1):
        ids += [
            f"critique:r{r}:{a}->{b}",
            f"critique:r{r}:{b}->{a}",
            f"refinement:r{r}:{a}",
            f"refinement:r{r}:{b}",
        ]
    return [*ids, f"synthesis:r{rounds}:judge"]


def same(turn: dict[str, Any]) -> tuple[Any, ...]:
    """Return what an interrupted debate must reproduce exactly: all but the model spec and the timings."""
    return tuple(
        json.dumps(turn.get(k), sort_keys=True)
        for k in (
            "seq",
            "id",
            "kind",
            "round",
            "speaker",
            "role",
            "target",
            "content",
            "tokens",
            "usage",
            "view",
        )
    )


def uninterrupted(debates: list[tuple[str, int]], **context: Any) -> list[list[dict[str, Any]]]:
    """Return the transcripts of the same debates run in memory without any interruption (no latency)."""
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


def cli(
    url: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*debate_command(), *args, "--db", url],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or cli_env(),
    )


@contextmanager
def workers(
    url: str, names: list[str], folder: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Start ``debate worker`` processes (stderr in ``folder/NAME.log``); all are gone afterwards."""
    with ExitStack() as stack:
        procs = {}
        for name in names:
            log = stack.enter_context(open(folder / f"{name}.log", "w"))
            procs[name] = subprocess.Popen(
                [
                    *debate_command(),
                    "worker",
                    "--name",
                    name,
                    "--stall-timeout",
                    str(STALL_S),
                    *extra,
                    "--db",
                    url,
                ],
                stdout=subprocess.DEVNULL,
                stderr=log,
                text=True,
                env=env or cli_env(),
            )
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
    return {
        row[0]: dict(zip(header, row, strict=True))
        for row in (line.split("\t") for line in lines[1:])
    }


def turns_of(row: dict[str, str]) -> int:
    return int(row["progress"].rsplit(", ", 1)[1].split()[0]) if "turns" in row["progress"] else 0


def wait_until(
    ready: Callable[[], Any],
    what: str,
    procs: dict[str, subprocess.Popen[str]],
    limit_s: float = 90,
) -> Any:
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


def submit_file(
    url: str, tmp_path: Path, debates: list[tuple[str, int]], names: list[str], *options: str
) -> None:
    path = tmp_path / "problems.jsonl"
    path.write_text(
        "".join(
            json.dumps({"problem": p, "thread_id": t, "rounds": r}) + "\n"
            for t, (p, r) in zip(names, debates, strict=True)
        )
    )
    result = cli(url, "submit", "--problems", str(path), "--agents", ",".join(AGENTS), *options)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == names


def check_transcripts(
    url: str, names: list[str], debates: list[tuple[str, int]]
) -> dict[str, dict[str, Any]]:
    values = stored(url, names)
    expected = uninterrupted(debates, model=f"fake:words={WORDS}")
    for name, (_, rounds), want in zip(names, debates, expected, strict=True):
        got = values[name]["transcript"]
        ids = [t["id"] for t in got]
        assert ids == expected_ids(rounds), (name, ids)
        assert len(set(ids)) == len(ids), f"{name}: a turn twice"
        assert [same(t) for t in got] == [same(t) for t in want], (
            f"{name} differs from an uninterrupted run"
        )
        assert values[name]["solution"], name
    return values
