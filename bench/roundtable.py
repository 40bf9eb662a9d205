"""The roundtable at length: 10,000 turns of 3 agents on the fake model, SQLite checkpoints.

Per-turn time at turns 100, 1,000, 5,000 and 10,000 against turn 100; bytes
per byte of text (replies of about 1 KB); the largest prompt against its
budget; summaries against turns / 50 (a second run with 4-word turns, so only
the 50-turn rhythm fires); and a memory
fidelity probe: facts planted as briefings in the first 100 turns, looked for
at the end in the shared summary's facets, the facet registry and the last
speaker's prompt.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from bench.common import db_bytes, raw_bytes, sqlite_saver, table, x
from debate_engine import RoundtableContext, compile_roundtable
from debate_engine.app.measure.probe.facts import briefings, contains, make_facts

AT = (100, 1_000, 5_000, 10_000)


class LastPrompt(BaseCallbackHandler):
    """Keep only the newest speaker prompt (10,000 prompts would not fit in memory)."""

    text = ""

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any
    ) -> None:
        if (metadata or {}).get("kind") == "message":
            self.text = "\n".join(str(m.content) for batch in messages for m in batch)


def _run(
    path: Path, turns: int, words: int
) -> tuple[dict[str, Any], dict[int, float], Any, LastPrompt, float]:
    facts = make_facts(10, [1, 25, 50, 75, 100])
    context = RoundtableContext(
        model=f"fake:words={words}",
        agents="architect,performance,security",
        turns=turns,
        briefings=briefings(facts),
    )
    ends: dict[int, float] = {}
    prompt = LastPrompt()
    with sqlite_saver(path) as saver:
        graph = compile_roundtable(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "rt"}, "callbacks": [prompt]}
        began = time.perf_counter()
        for update in graph.stream(
            {"problem": "Design a rate limiter"}, config, context=context, stream_mode="updates"
        ):
            if "turn" in update:
                ends[update["turn"]["turn_count"]] = time.perf_counter()
        seconds = time.perf_counter() - began
        values = graph.get_state(config).values
    return values, ends, facts, prompt, seconds


def _turn_ms(ends: dict[int, float], at: int, width: int = 50) -> float:
    """Mean milliseconds per turn over the ``width`` turns that end at ``at``."""
    start = max(1, at - width)
    return (ends[at] - ends[start]) * 1000 / (at - start)


def bench_roundtable(folder: Path, turns: int) -> None:
    values, ends, facts, prompt, seconds = _run(folder / "roundtable.sqlite", turns, words=150)
    short, *_ = _run(folder / "short.sqlite", turns, words=4)
    points = [t for t in AT if t <= turns]
    base = _turn_ms(ends, points[0])
    table(
        ["turn", "ms per turn", "vs turn 100"],
        [[t, f"{_turn_ms(ends, t):.1f}", x(_turn_ms(ends, t) / base)] for t in points],
    )
    transcript = values["transcript"]
    raw = raw_bytes(transcript)
    size = db_bytes(folder / "roundtable.sqlite")
    spoken = [t for t in transcript if t["view"]]  # briefings have no view
    largest = max(t["view"]["prompt_tokens"] for t in spoken)
    budget = min(t["view"]["budget_tokens"] for t in spoken)
    log = values["summary_log"]
    final = log[-1]
    rhythm = len(short["summary_log"])
    registry = " ".join(
        e["text"] for items in values.get("facets", {}).values() for e in items.values()
    )
    summary_text = final["text"] + " " + " ".join(sum(final["facets"].values(), []))
    table(
        ["what", "value", "against", "ratio"],
        [
            ["checkpoint bytes / raw text", f"{size:,} / {raw:,}", "goal <= 20x", x(size / raw)],
            ["largest prompt (tokens)", largest, f"budget {budget}", x(largest / budget)],
            ["summaries, ~1 KB turns (the recent slice fills first)", len(log), "", ""],
            [
                "summaries, 4-word turns (only the 50-turn rhythm)",
                rhythm,
                f"turns / 50 = {turns // 50}",
                x(rhythm / max(1, turns // 50)),
            ],
            [
                "facts in the final summary",
                sum(contains(summary_text, f) for f in facts),
                f"{len(facts)} planted",
                "",
            ],
            [
                "facts in the facet registry",
                sum(contains(registry, f) for f in facts),
                f"{len(facts)}",
                "",
            ],
            [
                "facts in the last speaker's prompt",
                sum(contains(prompt.text, f) for f in facts),
                f"{len(facts)}",
                "",
            ],
            ["run time (s)", f"{seconds:.0f}", f"{turns} turns", ""],
        ],
    )
