"""The debate's status record and its custom stream events."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.config import get_stream_writer

from debate_engine.graph.state import ConversationState, Phase, Status
from debate_engine.memory import SummaryRecord, Turn


def emit(event: dict[str, Any]) -> None:
    """Send a custom stream event; a no-op outside a streamed run."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer(event)


def new_status(problem: str, rounds: int) -> Status:
    """Return the status of a debate that has just been set up."""
    now = time.time()
    head = (problem.strip().splitlines() or [""])[0]
    return Status(
        problem=head[:120],
        phase="setup",
        round=0,
        rounds=rounds,
        turns=0,
        summaries=0,
        tokens=0,
        cost=0.0,
        started_at=now,
        updated_at=now,
    )


def advance(
    state: ConversationState,
    phase: Phase,
    round_no: int,
    turns: Sequence[Turn] = (),
    summaries: Sequence[SummaryRecord] = (),
) -> Status:
    """Return the status after a step that wrote ``turns`` and ``summaries``."""
    old = state["status"]
    status = Status(
        problem=old["problem"],
        phase=phase,
        round=round_no,
        rounds=old["rounds"],
        turns=old["turns"] + len(turns),
        summaries=old["summaries"] + len(summaries),
        tokens=old["tokens"],
        cost=old.get("cost", 0.0),
        started_at=old["started_at"],
        updated_at=time.time(),
    )
    if "cached_tokens" in old:
        status["cached_tokens"], status["saved"] = old["cached_tokens"], old.get("saved", 0.0)
    return status


def spent(record: Mapping[str, Any]) -> dict[str, int]:
    """Return what one call (a reply, a turn or a summary) cost as the spend charges it.

    Every request that came back with the provider's usage is charged, thrown-away
    ones included; a request that returned nothing is not. The progress lines and
    the report count calls by this rule, so they agree with the state's spend.
    """
    attempts = record.get("attempts")
    if attempts is not None:
        used = [a["usage"] for a in attempts if a.get("usage")]
    else:  # a turn keeps its attempts only when it took more than one: its usage is its one request's
        used = [record["usage"]] if record.get("usage") else []
    return {
        "requests": len(used),
        "input_tokens": sum(u["input_tokens"] for u in used),
        "output_tokens": sum(u["output_tokens"] for u in used),
    }
