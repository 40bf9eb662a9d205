"""Summaries off the critical path: sequential model steps (waves) and wall time at R = 2, 4, 8.

3 agents of 200-word replies against the loopback OpenAI-compatible server, every reply taking 300 ms, in a
context window small enough that summaries fire. A wave is a group of requests that were with the model at
the same time: a request that starts after the current wave's first one has had its reply belongs to the
next. The phases alone need 2R+2 waves (propose, then critique and refine each round, then the synthesis);
every wave above that is a summary on the critical path (issue 24: 8, 13 and 25 before, at most 2R+3 after).
Beside the wall time, the CPU time of the process (the engine and the loopback server, which does the same
work for any engine): on a busy machine wall time grows with the load, CPU time only with the work. The first
debate of the process (R=2) also pays the imports and builds its first run makes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from bench.common import PROBLEM, THREE, environment, table, x

LATENCY_S, WORDS, WINDOW = 0.3, 200, 4096
ROUNDS = (2, 4, 8)


def waves(starts: list[float], latency: float) -> int:
    """Count the requests grouped into sequential steps: one starting once the wave's first reply is back opens the next."""
    count, opened = 0, float("-inf")
    for start in sorted(starts):
        if start >= opened + latency * 0.9:
            count, opened = count + 1, start
    return count


def _debate(rounds: int) -> tuple[int, int, int, int, float, float]:
    """One debate against the server: its waves, requests, summaries, prompt tokens, wall and CPU time."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from debate_engine import Context, compile_debate
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(words=WORDS) as server:
        server.latency_s = LATENCY_S
        with environment(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench-000000"):
            began, used = time.perf_counter(), time.process_time()
            values = compile_debate().invoke(
                {"problem": PROBLEM},
                {"configurable": {"thread_id": f"waves-{rounds}"}},
                context=Context(
                    model="openai:bench", agents=THREE, rounds=rounds, context_window=WINDOW
                ),
            )
            seconds, cpu = time.perf_counter() - began, time.process_time() - used
        starts = [r["time"] for r in server.requests if r["path"].endswith("/chat/completions")]
    prompt = values["spend"]["total"]["input_tokens"]
    return waves(starts, LATENCY_S), len(starts), len(values["summary_log"]), prompt, seconds, cpu


def bench_waves() -> None:
    rows = []
    for rounds in ROUNDS:
        count, requests, summaries, prompt, seconds, cpu = _debate(rounds)
        floor = 2 * rounds + 2
        rows.append(
            [
                f"R={rounds}",
                count,
                f"2R+2 = {floor}",
                x(count / floor),
                requests,
                summaries,
                f"{prompt:,}",
                f"{seconds:.2f}",
                f"{floor * LATENCY_S:.2f}",
                x(seconds / (floor * LATENCY_S)),
                f"{cpu:.2f}",
            ]
        )
    table(
        [
            "debate",
            "waves",
            "phases alone",
            "ratio",
            "requests",
            "summaries",
            "prompt tokens",
            "wall s",
            "2R+2 x 300 ms",
            "ratio",
            "CPU s",
        ],
        rows,
    )
    print(
        f"(3 agents, {WORDS}-word replies, {LATENCY_S * 1000:.0f} ms a reply, context window {WINDOW}; "
        "issue 24: at most 2R+3 waves)\n"
    )
