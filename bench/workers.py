"""Scale-out: 40 debates on 1, 2 and 4 worker processes sharing one PostgreSQL, and the hand-over after a SIGKILL.

Each size runs on a fresh database of a throwaway server on loopback (Debian's
``postgresql`` binaries, as the integration tests use): 40 debates (2 agents,
2 rounds: 6 phases of ``fake:latency_ms=300`` calls) are submitted to N
running ``debate worker --concurrency C`` processes; the wall time runs from
the jobs' insertion to the last one's end (the server's own event times) and
is shown as a ratio to one worker, beside the floor that only the model's
latency sets. Each worker's start-up (imports, pools, tables) is shown apart:
it is paid once per process, not per debate.

Hand-over: two workers at the default ``--stall-timeout``; one is SIGKILLed
mid-debate, and the time until each of its debates runs again on the other
worker is printed next to the stated bound. Nothing asserts on time.

    python -m bench.workers [--concurrency 4] [--debates 40] [--stall-timeout 15]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.common import table, x

MODEL = "fake:latency_ms=300,words=40"
TEAM = ["--agents", "kiss,security", "--rounds", "2"]
PHASES = 6  # propose, critique, refine, critique, refine, synthesize
COUNT_SQL = (
    "SELECT count(*) FILTER (WHERE status IN ('todo', 'doing')), count(*) FROM procrastinate_jobs"
)
SPAN_SQL = """
SELECT EXTRACT(EPOCH FROM max(at) FILTER (WHERE type = 'succeeded') - min(at) FILTER (WHERE type = 'deferred'))
  FROM procrastinate_events"""
RUNNING_ON_SQL = """
SELECT j.lock, n.worker FROM procrastinate_jobs j JOIN debate_job_notes n ON n.job_id = j.id
 WHERE j.status = 'doing' AND n.worker_id IS NOT DISTINCT FROM j.worker_id"""


def debate(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "debate"
    return [
        str(script) if script.exists() else sys.executable,
        *([] if script.exists() else ["-m", "debate_engine.app.cli.main"]),
        *args,
    ]


def submit(url: str, folder: Path, count: int, rounds: int = 2) -> None:
    path = folder / f"problems-{count}.jsonl"
    path.write_text(
        "".join(
            json.dumps({"problem": f"Design service_{i}.py for {100 + i} rps", "rounds": rounds})
            + "\n"
            for i in range(count)
        )
    )
    subprocess.run(
        debate("submit", "--problems", str(path), "--model", MODEL, *TEAM[:2], "--db", url),
        check=True,
        capture_output=True,
        text=True,
    )


@contextmanager
def workers(
    url: str, names: list[str], *extra: str
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    with ExitStack() as stack:
        procs = {
            n: subprocess.Popen(
                debate("worker", "--name", n, *extra, "--db", url),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for n in names
        }
        stack.callback(
            lambda: [p.send_signal(signal.SIGTERM) for p in procs.values() if p.poll() is None]
        )
        try:
            yield procs
        finally:
            stack.close()
            for proc in procs.values():
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()


def unfinished(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(COUNT_SQL).fetchone()
    return int(row[0]) if row else 0


def ready_workers(url: str) -> int:
    """Workers registered (heartbeating) in the queue; 0 before the first worker made the tables."""
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0


def wall(url: str, folder: Path, n: int, concurrency: int, count: int) -> tuple[float, float]:
    """Seconds from the jobs' insertion to the last one's end on ``n`` running workers, and their start-up."""
    import psycopg

    began = time.perf_counter()
    with workers(url, [f"w{i}" for i in range(n)], "--concurrency", str(concurrency)):
        while ready_workers(url) < n:
            time.sleep(0.05)
        ready = time.perf_counter() - began
        submit(url, folder, count)
        while unfinished(url):
            time.sleep(0.1)
    with psycopg.connect(url) as conn:
        row = conn.execute(SPAN_SQL).fetchone()
    return float(row[0]) if row else 0.0, ready


def running_on(url: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {row[0]: row[1] for row in conn.execute(RUNNING_ON_SQL).fetchall()}  # type: ignore[arg-type]


def handover(url: str, folder: Path, stall_s: float) -> tuple[float, int]:
    """Seconds from SIGKILLing a worker mid-debate until its last orphaned debate runs on the other one."""
    submit(url, folder, 4, rounds=12)  # long debates: still running when the kill comes
    with workers(url, ["victim"], "--concurrency", "2", "--stall-timeout", f"{stall_s:g}") as first:
        while len([w for w in running_on(url).values() if w == "victim"]) < 2:
            time.sleep(0.1)
        with workers(url, ["heir"], "--concurrency", "4", "--stall-timeout", f"{stall_s:g}"):
            time.sleep(2)  # the heir is up and has claimed the two debates still queued
            orphans = {t for t, w in running_on(url).items() if w == "victim"}
            first["victim"].send_signal(signal.SIGKILL)
            killed = time.perf_counter()
            while not orphans <= {t for t, w in running_on(url).items() if w == "heir"}:
                time.sleep(0.1)
            return time.perf_counter() - killed, len(orphans)


def floor(count: int, slots: int) -> float:
    """Seconds if only the model's latency counted: waves of ``slots`` debates, PHASES calls each."""
    return -(-count // slots) * PHASES * 0.3


def bench_workers(concurrency: int = 4, count: int = 40, stall_s: float = 15.0) -> None:
    from debate_engine.app.cli.worker import handover_bound
    from tests.integration.conftest import (
        NoPostgres,
        fresh_database,
        server_bindir,
        temporary_postgres,
    )

    try:
        server_bindir()
    except NoPostgres as exc:
        print(f"(skipped: {exc})\n")
        return
    with (
        temporary_postgres() as server,
        tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp,
    ):
        folder = Path(tmp)
        walls, ready = {}, {}
        for n in (1, 2, 4):
            print(
                f"(running {count} debates on {n} worker(s) at --concurrency {concurrency} ...)",
                flush=True,
            )
            walls[n], ready[n] = wall(fresh_database(server), folder, n, concurrency, count)
        table(
            [
                "workers",
                "wall s",
                "speed-up vs 1 worker",
                "ideal",
                "wall / latency-only floor",
                "start-up s",
            ],
            [
                [
                    n,
                    f"{walls[n]:.1f}",
                    x(walls[1] / walls[n]),
                    x(n),
                    x(walls[n] / floor(count, n * concurrency)),
                    f"{ready[n]:.1f}",
                ]
                for n in walls
            ],
        )
        print(
            "(wall: from the jobs' insertion to the last one's end, on workers already running; the floor is "
            f"waves of {concurrency} x workers debates, {PHASES} call latencies each; goal: 4 workers >= 3.00x)\n"
        )
        print(
            f"(hand-over: SIGKILL one of two workers at --stall-timeout {stall_s:g} ...)",
            flush=True,
        )
        took, orphans = handover(fresh_database(server), folder, stall_s)
        table(
            ["orphaned debates", "hand-over s", "stated bound s", "hand-over / bound"],
            [
                [
                    orphans,
                    f"{took:.1f}",
                    f"{handover_bound(stall_s):g}",
                    x(took / handover_bound(stall_s)),
                ]
            ],
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.workers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, help="--concurrency of every worker (default 4)"
    )
    parser.add_argument("--debates", type=int, default=40)
    parser.add_argument(
        "--stall-timeout", type=float, default=15.0, help="the workers' --stall-timeout"
    )
    args = parser.parse_args()
    bench_workers(args.concurrency, args.debates, args.stall_timeout)


if __name__ == "__main__":
    main()
