"""Debate only when it pays: escalate's tokens per task against vote-k and the debate, on mixed populations.

Each population's tasks differ in difficulty (``fake:solve=0.95/0.3``: half easy, half hard; ``0.3-0.9``: a
solve probability drawn per task), so that k voters agree on some tasks and split on others. Printed per
population: the share escalated against the theory ``1 - E[p^k + (1-p)^k]``, tokens per task of vote-k,
escalate-k and the debate, and escalate's as a ratio of each; the prediction (the vote's tokens plus the
escalated share of what a debate spends beyond its proposals) beside what escalate spent.
"""

from __future__ import annotations

import asyncio
from statistics import mean

from bench.common import table, x

POPULATIONS = {
    "0.95/0.3": (0.95**3 + 0.05**3 + 0.3**3 + 0.7**3) / 2,
    "0.3-0.9": (0.9**4 - 0.3**4 + 0.7**4 - 0.1**4) / (4 * 0.6),
}
"""Each population's chance that 3 voters agree, E[p^3 + (1-p)^3] (a uniform range integrated)."""


def bench_escalate(tasks: int = 200) -> None:
    from debate_engine import Context
    from debate_engine.app.measure.compare.execute import Comparison, run_protocol
    from debate_engine.app.measure.compare.protocols import protocol
    from debate_engine.app.measure.compare.tasks import builtin_tasks
    from debate_engine.graph.builder import compile_debate
    from debate_engine.graph.sample import compile_sample

    found = builtin_tasks(f"builtin:arithmetic:{tasks}")
    rows = []
    for spec, agree in POPULATIONS.items():
        model = f"fake:solve={spec}"
        graphs = {"debate": compile_debate(), "sample": compile_sample()}
        comparison = Comparison(model, graphs, jobs=16, quiet=True)
        context = Context(model=model, rounds=1)
        spent = {}
        for name in ("vote", "escalate", "debate"):
            runs = asyncio.run(
                run_protocol(comparison, protocol(name, context, "generalist", 3), found, 1)
            )
            spent[name] = runs
        tokens = {name: mean(r["tokens"] for r in runs) for name, runs in spent.items()}
        share = mean(bool(r["escalated"]) for r in spent["escalate"])
        predicted = tokens["vote"] + share * (tokens["debate"] - tokens["vote"])
        rows.append(
            [
                f"`{spec}`",
                f"{share:.3f} ({1 - agree:.3f})",
                f"{tokens['vote']:,.0f}",
                f"{tokens['escalate']:,.0f} ({predicted:,.0f})",
                f"{tokens['debate']:,.0f}",
                x(tokens["escalate"] / tokens["vote"]),
                x(tokens["escalate"] / tokens["debate"]),
            ]
        )
    table(
        [
            f"population ({tasks} tasks, k = 3)",
            "escalated (theory)",
            "vote-3 tokens/task",
            "escalate-3 (predicted)",
            "debate",
            "escalate / vote",
            "escalate / debate",
        ],
        rows,
    )
