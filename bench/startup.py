"""A fast start and no waste: command start-up, time to the first request, non-model time in a debate.

Baselines: a bare ``python -c pass`` for start-up; the model latency on the
critical path (waves of concurrent calls x latency) for the debate's own time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import table, x

DEBATE = str(Path(sys.executable).with_name("debate"))
LATENCY_S = 2.0


def _seconds(command: list[str], env: dict[str, str] | None = None, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run(command, capture_output=True, env=env, check=False)
        best = min(best, time.perf_counter() - began)
    return best


def _first_request(folder: Path) -> tuple[float, float, float]:
    """Seconds from launch to the first request, from the last reply to exit, and in all."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(words=30) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-bench-000000",
               "DEBATE_DB": str(folder / "startup.sqlite")}
        began = time.time()
        subprocess.run([DEBATE, "run", "--model", "openai:test-model", "--rounds", "1", "--quiet", "p"], env=env,
                       capture_output=True, check=False)
        ended = time.time()
        times = [r["time"] for r in server.requests]
    return times[0] - began, ended - times[-1], ended - began


def _overhead() -> tuple[float, int]:
    """Wall time of a 3-agent round on a 2 s model, and its waves of calls."""
    from debate_engine import Context, compile_debate

    graph = compile_debate()
    context = Context(model=f"fake:latency_ms={int(LATENCY_S * 1000)},words=60", rounds=1)
    began = time.perf_counter()
    values: Any = asyncio.run(graph.ainvoke({"problem": "Design a cache"}, {"configurable": {"thread_id": "o"}},
                                            context=context))
    wall = time.perf_counter() - began
    waves = len({t["kind"] for t in values["transcript"]}) + len({s["round"] for s in values["summary_log"]})
    return wall, waves


def bench_startup(folder: Path) -> None:
    bare = _seconds([sys.executable, "-c", "pass"])
    helps = _seconds([DEBATE, "--help"])
    version = _seconds([DEBATE, "--version"])
    first, after, total = _first_request(folder)
    wall, waves = _overhead()
    model = waves * LATENCY_S
    table(["what", "seconds", "against", "ratio"], [
        ["`debate --help`", f"{helps:.2f}", f"bare interpreter {bare:.2f} s", x(helps / bare)],
        ["`debate --version`", f"{version:.2f}", f"bare interpreter {bare:.2f} s", x(version / bare)],
        ["launch to the first model request", f"{first:.2f}", f"whole run {total:.2f} s", x(first / total)],
        ["last reply to exit", f"{after:.2f}", f"whole run {total:.2f} s", x(after / total)],
        [f"3-agent round on a {LATENCY_S:.0f} s model", f"{wall:.2f}", f"{waves} waves x {LATENCY_S:.0f} s = {model:.0f} s",
         f"{(wall - model) / wall:.1%} not waiting for the model"],
    ])
