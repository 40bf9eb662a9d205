"""Benchmarks printed as ratios against a baseline run in the same process.

1. Concurrency: one critique phase of 4 agents (12 calls) on fake:latency_ms=500,
   against one call's latency.
2. Summarization cost: 3 agents, R rounds, fake:words=300; full history
   (summarizing off, a window large enough that nothing is dropped) against
   the fresh and rolling strategies in an 8K window.
3. Checkpoint growth: SQLite bytes per turn as the debate grows.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from typing import Any

os.environ.setdefault("DEBATE_MODEL", "fake")

from debate_engine.graph import Context, compile_debate  # noqa: E402
from debate_engine.app.report import totals  # noqa: E402


def run(
    context: Context, *, checkpointer: Any = None, stream: bool = False
) -> tuple[dict[str, Any], list[tuple[float, dict[str, Any]]]]:
    graph = compile_debate(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "bench"}, "max_concurrency": 16, "recursion_limit": 10_000}
    events: list[tuple[float, dict[str, Any]]] = []
    if not stream:
        return graph.invoke(
            {"problem": "Design a rate limiter for api_gateway.py at 1000 rps."}, config, context=context
        ), events
    for event in graph.stream({"problem": "Design a rate limiter"}, config, context=context, stream_mode="custom"):
        events.append((time.perf_counter(), event))
    return graph.get_state(config).values, events


def bench_concurrency() -> None:
    latency = 0.5
    _, events = run(
        Context(model="fake:latency_ms=500", agents="architect,performance,security,testing", rounds=1), stream=True
    )
    starts = {e["phase"]: t for t, e in events if e.get("event") == "phase_started"}
    critique = starts["refine"] - starts["critique"]
    calls = sum(1 for _, e in events if e.get("event") == "contribution" and e["kind"] == "critique")
    print("## Concurrency: one critique phase, 4 agents, fake:latency_ms=500\n")
    print("| calls | phase time (s) | one call (s) | phase / one call | sequential would be |")
    print("|---|---|---|---|---|")
    print(
        f"| {calls} | {critique:.2f} | {latency:.2f} | {critique / latency:.2f}x | {calls * latency:.1f} s ({calls}x) |\n"
    )


def cost(values: dict[str, Any]) -> tuple[int, int, int]:
    """Largest prompt, total tokens (summaries included), summarizer tokens."""
    largest = max((t["view"]["prompt_tokens"] for t in values["transcript"] if t.get("view")), default=0)
    rows = totals(values["transcript"], values.get("summary_log", []))
    total = sum(r["input"] + r["output"] for r in rows.values())
    summaries = sum(r["input"] + r["output"] for (_, phase), r in rows.items() if phase == "summary")
    return largest, total, summaries


def bench_summaries(rounds_list: list[int]) -> None:
    print("## Summarization: 3 agents, fake:words=300, budget = 8192 window - 1024 output = 7168 tokens\n")
    print(
        "| R | mode | largest prompt | within budget | total tokens | summarizer tokens | summaries | vs full | rolling vs fresh |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    agents = "architect,performance,security"
    for rounds in rounds_list:
        full, _ = run(
            Context(model="fake:words=300", agents=agents, rounds=rounds, summarize=False, context_window=10_000_000)
        )
        base = cost(full)
        results = {"full history": (base, 0, None)}
        for method in ("fresh", "rolling"):
            values, _ = run(
                Context(
                    model="fake:words=300", agents=agents, rounds=rounds, summary_method=method, context_window=8192
                )
            )
            results[method] = (cost(values), len(values["summary_log"]), values)
        fresh_total = results["fresh"][0][1]
        for mode, ((largest, total, summ), count, _) in results.items():
            within = "yes" if largest <= 7168 else "no"
            vs_fresh = f"{total / fresh_total:.2f}x" if mode == "rolling" else ""
            print(
                f"| {rounds} | {mode} | {largest} | {within} | {total} | {summ} | {count} | {total / base[1]:.2f}x | {vs_fresh} |"
            )
    print()


def bench_checkpoints(rounds_list: list[int]) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    print("## Checkpoint growth: SQLite, 3 agents, fake:words=300, rolling summaries\n")
    print("| R | turns | text (MB) | database (MB) | bytes per turn | per turn vs smallest R |")
    print("|---|---|---|---|---|---|")
    first = None
    for rounds in rounds_list:
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/b.sqlite"
            conn = sqlite3.connect(path, check_same_thread=False)
            values, _ = run(
                Context(model="fake:words=300", agents="architect,performance,security", rounds=rounds),
                checkpointer=SqliteSaver(conn),
            )
            conn.execute("VACUUM")
            conn.close()
            size = os.path.getsize(path)
        turns = len(values["transcript"])
        text = sum(len(t["content"]) for t in values["transcript"])
        per_turn = size / turns
        first = first or per_turn
        print(
            f"| {rounds} | {turns} | {text / 1e6:.2f} | {size / 1e6:.2f} | {per_turn:,.0f} | {per_turn / first:.2f}x |"
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", default="5,10,20,40", help="comma-separated round counts")
    parser.add_argument("--only", choices=["concurrency", "summaries", "checkpoints"], help="run one benchmark")
    args = parser.parse_args()
    rounds_list = [int(r) for r in args.rounds.split(",")]
    started = time.perf_counter()
    if args.only in (None, "concurrency"):
        bench_concurrency()
    if args.only in (None, "summaries"):
        bench_summaries(rounds_list)
    if args.only in (None, "checkpoints"):
        bench_checkpoints(rounds_list)
    print(f"(benchmarks took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
