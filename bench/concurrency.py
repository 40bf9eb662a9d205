"""Concurrency: one critique phase of 4 agents (12 calls) against one call's latency.

Baseline: one ``fake:latency_ms=500`` call, timed in this process. The
critique phase runs from its ``phase_started`` event to refine's; the whole
debate (propose, critique, refine, synthesize: four phases of parallel calls)
is timed through ``ainvoke`` against one call's latency per wave of calls (the
phases plus any summarize step). The sync row runs the same phase through
``stream`` with LangGraph's default thread pool, as ``invoke`` would.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.common import FOUR, PROBLEM, table, x
from debate_engine import Context, compile_debate
from debate_engine.providers.factory import chat_model

SPEC = "fake:latency_ms=500"
PHASES = 4
"""Propose, critique, refine, synthesize: the calls of each run at once."""


def one_call() -> float:
    model = chat_model(SPEC)

    async def call() -> float:
        began = time.perf_counter()
        await model.ainvoke("one call")
        return time.perf_counter() - began

    return min(asyncio.run(call()) for _ in range(2))


def context() -> Context:
    return Context(model=SPEC, agents=FOUR, rounds=1)


def is_critique(event: dict[str, Any]) -> bool:
    return event.get("event") == "contribution" and event.get("kind") == "critique"


def critique_span(timed: list[tuple[float, dict[str, Any]]]) -> tuple[float, int]:
    """From critique's ``phase_started`` to its last contribution (before any summarize step)."""
    start = next(
        t for t, e in timed if e.get("event") == "phase_started" and e.get("phase") == "critique"
    )
    ends = [t for t, e in timed if is_critique(e)]
    return max(ends) - start, len(ends)


def summary_steps(log: list[dict[str, Any]]) -> int:
    """Summarize steps: the summaries of one step start together, steps are a call's latency apart."""
    stamps = sorted(r["created_at"] for r in log)
    return sum(1 for i, t in enumerate(stamps) if i == 0 or t - stamps[i - 1] > 0.25)


async def astream_phase(thread: str) -> tuple[float, int]:
    graph, config = compile_debate(), {"configurable": {"thread_id": thread}}
    timed = [
        (time.perf_counter(), e)
        async for e in graph.astream(
            {"problem": PROBLEM}, config, context=context(), stream_mode="custom"
        )
    ]
    return critique_span(timed)


def stream_phase(thread: str) -> tuple[float, int]:
    graph, config = compile_debate(), {"configurable": {"thread_id": thread}}
    timed = [
        (time.perf_counter(), e)
        for e in graph.stream({"problem": PROBLEM}, config, context=context(), stream_mode="custom")
    ]
    return critique_span(timed)


async def ainvoke_all(thread: str) -> tuple[float, int, int]:
    """Seconds, calls (turns and summaries) and summarize steps of the whole debate."""
    graph = compile_debate()
    began = time.perf_counter()
    out = await graph.ainvoke(
        {"problem": PROBLEM}, {"configurable": {"thread_id": thread}}, context=context()
    )
    calls = len(out["transcript"]) + len(out["summary_log"])
    return time.perf_counter() - began, calls, summary_steps(out["summary_log"])


def bench_concurrency() -> None:
    base = one_call()
    a_phase, a_calls = asyncio.run(astream_phase("conc-async"))
    s_phase, s_calls = stream_phase("conc-sync")
    whole, calls, steps = asyncio.run(ainvoke_all("conc-ainvoke"))
    waves = PHASES + steps
    print(
        f"4 agents, 1 round, {SPEC}; one call measured here: {base:.3f} s. The ainvoke debate made "
        f"{calls} calls in {PHASES} phases plus {steps} summarize step(s): {waves} waves of calls.\n"
    )
    table(
        ["what", "calls", "seconds", "baseline", "ratio", "one at a time would be"],
        [
            [
                "critique phase, astream (async)",
                a_calls,
                f"{a_phase:.3f}",
                "one call",
                x(a_phase / base),
                x(a_calls),
            ],
            [
                "critique phase, stream (sync)",
                s_calls,
                f"{s_phase:.3f}",
                "one call",
                x(s_phase / base),
                x(s_calls),
            ],
            [
                "whole debate, ainvoke",
                calls,
                f"{whole:.3f}",
                f"{waves} calls",
                x(whole / (waves * base)),
                x(calls / waves),
            ],
        ],
    )
