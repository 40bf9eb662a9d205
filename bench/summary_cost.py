"""Summary cost: full history against the fresh and rolling strategies at R rounds.

3 agents on ``fake:words=300``. Baseline: full history (summarizing off, a
window so large nothing is ever dropped), run in this process. Fresh and
rolling run in an 8K window (budget 8192 - 1024 output = 7168 tokens).
"""

from __future__ import annotations

from typing import Any

from bench.common import PROBLEM, THREE, table, x
from debate_engine import Context, compile_debate

BUDGET = 8192 - 1024


def run(context: Context) -> dict[str, Any]:
    graph = compile_debate()
    return dict(
        graph.invoke({"problem": PROBLEM}, {"configurable": {"thread_id": "cost"}}, context=context)
    )


def tokens(usage: dict[str, Any] | None, prompt: int = 0, reply: int = 0) -> int:
    usage = usage or {}
    return (usage.get("input_tokens") or prompt) + (usage.get("output_tokens") or reply)


def cost(values: dict[str, Any]) -> tuple[int, int, int]:
    """Largest prompt, total tokens (summaries included), summarizer tokens: counted here, not by the engine."""
    turns = [t for t in values["transcript"] if t.get("model") is not None]
    largest = max((t["view"]["prompt_tokens"] for t in turns if t.get("view")), default=0)
    debate = sum(
        tokens(t.get("usage"), (t.get("view") or {}).get("prompt_tokens", 0), t["tokens"])
        for t in turns
    )
    summaries = sum(tokens(r.get("usage")) for r in values.get("summary_log", []))
    return largest, debate + summaries, summaries


def modes(rounds: int) -> dict[str, dict[str, Any]]:
    common: dict[str, Any] = {"model": "fake:words=300", "agents": THREE, "rounds": rounds}
    out = {"full history": run(Context(**common, summarize=False, context_window=10_000_000))}
    for method in ("fresh", "rolling"):
        out[method] = run(Context(**common, summary_method=method, context_window=8192))
    return out


def bench_summary_cost(rounds_list: list[int]) -> None:
    print(
        f"3 agents, fake:words=300; fresh and rolling in an 8K window (budget {BUDGET} tokens).\n"
    )
    rows = []
    for rounds in rounds_list:
        results = modes(rounds)
        base = cost(results["full history"])[1]
        fresh = cost(results["fresh"])[1]
        for mode, values in results.items():
            largest, total, summ = cost(values)
            rows.append(
                [
                    rounds,
                    mode,
                    largest,
                    "yes" if largest <= BUDGET else "no",
                    total,
                    summ,
                    len(values["summary_log"]),
                    x(total / base),
                    x(total / fresh) if mode == "rolling" else "",
                ]
            )
    table(
        [
            "R",
            "mode",
            "largest prompt",
            "within budget",
            "total tokens",
            "summarizer tokens",
            "summaries",
            "vs full",
            "rolling vs fresh",
        ],
        rows,
    )
