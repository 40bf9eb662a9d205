"""A naive LangGraph baseline: the transcript as a plain ``Annotated[list, operator.add]`` channel.

One node per turn appends a ~1 KB turn dict; every checkpoint stores the whole
list again, so its database grows with the square of the turns. Printed beside
our debate at the same turn counts, each as database bytes / raw transcript bytes.
"""

from __future__ import annotations

import operator
import random
import time
from pathlib import Path
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from bench.common import TWO, Runs, db_bytes, kb, raw_bytes, rounds_for, sqlite_saver, table, x
from debate_engine.providers.fake import VOCABULARY


class NaiveState(TypedDict):
    transcript: Annotated[list[dict[str, Any]], operator.add]
    target: int


def _content(seq: int) -> str:
    """About 1 KB of words, like one fake:words=150 turn."""
    rng = random.Random(seq)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 1000:
        words.append(rng.choice(VOCABULARY))
    return " ".join(words)


def _turn(state: NaiveState) -> dict[str, Any]:
    seq = len(state["transcript"])
    speaker = ("architect", "performance")[seq % 2]
    turn = {
        "seq": seq,
        "id": f"turn:{seq}:{speaker}",
        "round": seq // 4 + 1,
        "kind": "refine",
        "speaker": speaker,
        "content": _content(seq),
        "created_at": time.time(),
    }
    return {"transcript": [turn]}


def _more(state: NaiveState) -> str:
    return "turn" if len(state["transcript"]) < state["target"] else END


def naive_graph(saver: Any) -> Any:
    builder = StateGraph(NaiveState)
    builder.add_node("turn", _turn)
    builder.add_edge(START, "turn")
    builder.add_conditional_edges("turn", _more)
    return builder.compile(checkpointer=saver)


def naive_run(path: Path, turns: int) -> tuple[int, int, float]:
    """(database bytes, raw bytes, seconds) of a naive run to ``turns`` turns."""
    config: Any = {"configurable": {"thread_id": "naive"}, "recursion_limit": turns + 10}
    began = time.perf_counter()
    with sqlite_saver(path) as saver:
        out = naive_graph(saver).invoke({"transcript": [], "target": turns}, config)
    seconds = time.perf_counter() - began
    return db_bytes(path), raw_bytes(out["transcript"]), seconds


def bench_naive(runs: Runs, sizes: list[int]) -> None:
    print(
        "Naive: StateGraph, transcript = Annotated[list, operator.add], one node per ~1 KB turn, sync SqliteSaver."
    )
    print("Ours: the 2-agent debate of the storage section at the same turn count.\n")
    rows = []
    for turns in sizes:
        size, raw, seconds = naive_run(runs.folder / f"naive-{turns}.sqlite", turns)
        ours = runs.get(TWO, rounds_for(turns))
        ours_size = db_bytes(ours.path)
        rows.append(
            [
                f"~{turns:,}",
                turns,
                kb(size),
                x(size / raw),
                f"{size / turns:,.0f}",
                f"{seconds:.1f}",
                ours.turns,
                kb(ours_size),
                x(ours_size / ours.raw),
                f"{ours_size / ours.turns:,.0f}",
                x((ours_size / ours.raw) / (size / raw)),
            ]
        )
    table(
        [
            "turns",
            "naive turns",
            "naive DB KB",
            "naive DB / raw",
            "naive bytes/turn",
            "naive s",
            "our turns",
            "our DB KB",
            "our DB / raw",
            "our bytes/turn",
            "ours / naive (DB/raw)",
        ],
        rows,
    )
