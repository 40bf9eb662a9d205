"""What a turn's speaker saw, and how each agent's memory was folded: the memory page's model.

A view is positional (``memory.records``): the speaker was shown its
perspective's turns from ``from_seq`` up to ``to_seq`` verbatim and a summary
covering those before ``through``. The coverage strip checks it: every earlier
turn of the perspective is verbatim, summarized, or (never, if the memory rules
hold) neither.
"""

from __future__ import annotations

from typing import Any, cast

from debate_engine.memory.perspective import sees
from debate_engine.memory.records import Turn

GAP = "neither"
"""A perspective turn the speaker was shown neither verbatim nor through its summary."""


def summary_by_id(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return every summary record by its id."""
    return {s["id"]: s for s in values.get("summary_log", [])}


def chain_of(summaries: dict[str, dict[str, Any]], summary_id: str | None) -> list[dict[str, Any]]:
    """Return a summary and its parents, newest first."""
    chain: list[dict[str, Any]] = []
    while summary_id and summary_id in summaries and len(chain) < len(summaries):
        chain.append(summaries[summary_id])
        summary_id = summaries[summary_id].get("parent_id")
    return chain


def chains(values: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Return each agent's summaries in order, failed attempts included: the chain the page lists."""
    found: dict[str, list[dict[str, Any]]] = {}
    for record in values.get("summary_log", []):
        found.setdefault(record["agent_id"], []).append(record)
    return list(found.items())


def coverage(values: dict[str, Any], turn: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the speaker's earlier perspective turns as runs of one state each: verbatim, summary or neither."""
    view = turn.get("view") or {}
    if not view:
        return []
    summary = summary_by_id(values).get(view.get("summary_id") or "")
    through = summary["through"] if summary and summary.get("status") == "ok" else 0
    runs: list[dict[str, Any]] = []
    for earlier in values.get("transcript", [])[: view["to_seq"]]:
        if not sees(cast(Turn, earlier), turn["speaker"]):
            continue
        seq = earlier["seq"]
        state = "verbatim" if seq >= view["from_seq"] else "summary" if seq < through else GAP
        if runs and runs[-1]["state"] == state:
            runs[-1]["last"], runs[-1]["count"] = seq, runs[-1]["count"] + 1
        else:
            runs.append({"state": state, "first": seq, "last": seq, "count": 1})
    total = sum(r["count"] for r in runs) or 1
    for run in runs:
        run["share"] = round(100 * run["count"] / total, 3)
    return runs


def turn_memory(values: dict[str, Any], seq: int) -> dict[str, Any] | None:
    """Return what the speaker of turn ``seq`` saw: summary, verbatim range, prompt tokens, coverage."""
    transcript = values.get("transcript", [])
    if not 0 <= seq < len(transcript):
        return None
    turn = transcript[seq]
    view = turn.get("view") or {}
    summaries = summary_by_id(values)
    summary = summaries.get(view.get("summary_id") or "")
    strip = coverage(values, turn)
    verbatim = (
        [t for t in transcript[view["from_seq"] : view["to_seq"]] if sees(t, turn["speaker"])]
        if view
        else []
    )
    return {
        "turn": turn,
        "view": view,
        "summary": summary,
        "chain": chain_of(summaries, view.get("summary_id")),
        "verbatim": verbatim,
        "coverage": strip,
        "gaps": sum(r["count"] for r in strip if r["state"] == GAP),
        "share": round(100 * view["prompt_tokens"] / view["budget_tokens"], 1)
        if view.get("budget_tokens")
        else None,
    }
