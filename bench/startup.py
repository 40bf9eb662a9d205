"""A fast start and no waste: command start-up, time to the first request, non-model time in a debate.

Baselines: a bare ``python -c pass`` for start-up; for the debate's own time, a
3-agent round through the CLI against a loopback OpenAI-compatible server whose
replies take 2 s: between the first request and the last reply, the time in which
no request is with the model is the engine's own. The time to the first request is
the best of that run and three more launches stopped at their first request, as
``--help`` is the best of three: a single launch on a busy machine varies by a second.

Beside each of those wall times, the CPU seconds the process used (Linux's ``/proc``; the children's rusage for
a whole command): on a machine other work keeps busy, wall time grows with the load while CPU time stays with
the work, so a change in wall time alone is the machine's, not the engine's.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import table, x

DEBATE = os.environ.get("DEBATE_BENCH_CLI") or str(Path(sys.executable).with_name("debate"))
"""The command measured: the installed console script, or the one ``bench.against`` writes for a tree."""
LATENCY_S = 2.0
LIBRARIES = "import langgraph.graph, langchain_openai, langgraph.checkpoint.sqlite"
"""What a debate on an OpenAI-compatible model cannot send its first request without: a bare interpreter importing
them is the floor of the time to that request."""


def _seconds(command: list[str], env: dict[str, str] | None = None, repeat: int = 3) -> float:
    return _timed(command, env, repeat)[0]


def _timed(
    command: list[str], env: dict[str, str] | None = None, repeat: int = 3
) -> tuple[float, float]:
    """Return the best wall seconds and the best CPU seconds (user + system) of ``repeat`` runs of ``command``."""
    best, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        used = _children_cpu()
        began = time.perf_counter()
        subprocess.run(command, capture_output=True, env=env, check=False)
        best = min(best, time.perf_counter() - began)
        cpu = min(cpu, _children_cpu() - used)
    return best, cpu


def _children_cpu() -> float:
    """CPU seconds of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used so far, from ``/proc``; None where there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _busy(starts: list[float], latency: float) -> float:
    """Seconds in which at least one request was with the model: the union of [start, start + latency]."""
    busy, reach = 0.0, float("-inf")
    for start in sorted(starts):
        busy += max(0.0, start + latency - max(start, reach))
        reach = max(reach, start + latency)
    return busy


def _cli_debate(folder: Path) -> dict[str, float]:
    """Return a 3-agent round through the CLI against a loopback server whose every reply takes ``LATENCY_S``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(words=30) as server:
        server.latency_s = LATENCY_S
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-bench-000000",
            "DEBATE_DB": str(folder / "startup.sqlite"),
        }
        began = time.time()
        subprocess.run(
            [DEBATE, "run", "--model", "openai:test-model", "--rounds", "1", "--quiet", "p"],
            env=env,
            capture_output=True,
            check=False,
        )
        ended = time.time()
        starts = [r["time"] for r in server.requests if r["path"].endswith("/chat/completions")]
    span = max(starts) + LATENCY_S - min(starts)
    return {
        "first": min(starts) - began,
        "after": ended - max(starts) - LATENCY_S,
        "total": ended - began,
        "span": span,
        "own": span - _busy(starts, LATENCY_S),
        "calls": len(starts),
    }


def _first_requests(folder: Path, repeat: int = 3) -> list[tuple[float, float | None]]:
    """Seconds from launch to the first request of ``repeat`` more launches, each stopped (SIGTERM) at that request,
    and the CPU seconds the process had used by then (None without ``/proc``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.openai_server import OpenAIServer

    firsts = []
    with OpenAIServer(words=30) as server:
        server.latency_s = 60.0
        for n in range(repeat):
            env = {
                **os.environ,
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "sk-bench-000000",
                "DEBATE_DB": str(folder / f"first-{n}.sqlite"),
            }
            before = len(server.requests)
            began = time.time()
            process = subprocess.Popen(
                [DEBATE, "run", "--model", "openai:test-model", "--rounds", "1", "--quiet", "p"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            while process.poll() is None and not _posts(server.requests[before:]):
                time.sleep(0.002)
            if posts := _posts(server.requests[before:]):
                firsts.append((min(posts) - began, _cpu_of(process.pid)))
            process.terminate()
            process.wait()
    return firsts


def _posts(requests: list[dict[str, Any]]) -> list[float]:
    return [r["time"] for r in requests if r["path"].endswith("/chat/completions")]


def bench_startup(folder: Path) -> None:
    bare = _seconds([sys.executable, "-c", "pass"])
    helps = _seconds([DEBATE, "--help"])
    version = _seconds([DEBATE, "--version"])
    run = _cli_debate(folder)
    launches = _first_requests(folder)
    first = min([run["first"], *(wall for wall, _ in launches)])
    after, total = run["after"], run["total"]
    libraries, libraries_cpu = _timed([sys.executable, "-c", LIBRARIES])
    cpus = [cpu for _, cpu in launches if cpu is not None]
    cpu_rows = (
        [
            [
                f"CPU to the first model request (best of {len(cpus)})",
                f"{min(cpus):.2f}",
                f"importing the libraries it needs, alone, CPU {libraries_cpu:.2f} s",
                x(min(cpus) / libraries_cpu),
            ]
        ]
        if cpus
        else []
    )
    table(
        ["what", "seconds", "against", "ratio"],
        [
            ["`debate --help`", f"{helps:.2f}", f"bare interpreter {bare:.2f} s", x(helps / bare)],
            [
                "`debate --version`",
                f"{version:.2f}",
                f"bare interpreter {bare:.2f} s",
                x(version / bare),
            ],
            [
                "launch to the first model request (best of 4)",
                f"{first:.2f}",
                f"whole run {total:.2f} s",
                x(first / total),
            ],
            [
                "launch to the first model request (best of 4)",
                f"{first:.2f}",
                f"importing the libraries it needs, alone {libraries:.2f} s",
                x(first / libraries),
            ],
            *cpu_rows,
            ["last reply to exit", f"{after:.2f}", f"whole run {total:.2f} s", x(after / total)],
            [
                f"first request to last reply, {run['calls']:.0f} calls of {LATENCY_S:.0f} s",
                f"{run['span']:.2f}",
                f"no call in flight {run['own']:.2f} s",
                f"{run['own'] / run['span']:.1%} not waiting for the model",
            ],
        ],
    )
