"""Set the debate up: fix the run's settings into state and start every tier afresh.

A new input on a thread that already holds a debate starts a clean debate:
the logs are overwritten, and the earlier debate stays in the thread's
checkpoint history.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from debate_engine.calls.ledger import empty_spend
from debate_engine.config.context import context_of
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import is_human
from debate_engine.graph.state import ConversationState
from debate_engine.nodes.briefing import briefing_for
from debate_engine.nodes.status import emit, new_status


def setup(state: ConversationState, runtime: Runtime[Any]) -> dict[str, Any]:
    """Resolve the run's context (a ``Context`` or ``RoundtableContext``) once; all after reads state."""
    problem = (state.get("problem") or "").strip()
    if not problem:
        raise ValueError("the problem is empty; pass {'problem': '...'}")
    settings = resolve(context_of(state.get("context"), runtime.context))
    emit(
        {
            "event": "debate_started",
            "agents": [a["id"] for a in settings["agents"]],
            "rounds": settings["rounds"],
            "protocol": settings["protocol"],
            "people": sum(is_human(a) for a in settings["agents"]),
        }
    )
    opening = briefing_for({**state, "settings": settings}, 1, 0)  # type: ignore[typeddict-item]
    return {
        "problem": problem,
        "settings": settings,
        "transcript": Overwrite(opening),
        "summary_log": Overwrite([]),
        "round": 0,
        "phase": "setup",
        "summarized_for": "",
        "questions": [],
        "solution": None,
        "status": new_status(problem, settings["rounds"]),
        "spend": empty_spend(),
        "stopped": None,
        "stop_reason": None,
        "assessments": Overwrite([]),
        "round_clock": None,
        "turn_count": 0,
        "current_speaker": None,
        "moderation": None,
        "facets": Overwrite({}),
        "forked_from": None,  # a new debate on a fork's thread is a debate of its own
    }
