"""Take a new debate in: fix its settings into state once, then start every tier afresh.

``intake`` is every graph's first node: it keeps the caller's settings (the
input's ``context``, else the run's context) marked with the graph's protocol,
and resolves them once into ``settings``. A debate stopped before ``setup``
therefore resumes with its own settings in any process. A caller that has
already resolved them (every command and the viewer do, with
``config.settled.settle``, to name every mistake before a thread exists) writes
them as this node's update instead (:func:`begin`), so they are never resolved
twice. ``setup`` reads them
and never resolves.

A new input on a thread that already holds a debate starts a clean debate:
the logs are overwritten, and the earlier debate stays in the thread's
checkpoint history.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from debate_engine.calls.ledger import empty_spend
from debate_engine.config.context import Context, context_dict, context_of
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import RunSettings, is_human
from debate_engine.graph.state import ConversationState
from debate_engine.nodes.briefing import briefing_for
from debate_engine.nodes.status import emit, new_status

INTAKE = "intake"
"""The first node's name: ``update_state(..., as_node=INTAKE)`` writes settings resolved elsewhere."""


class Intake:
    """The first node of a protocol's graph: keep the run's settings, marked, and resolve them once."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol

    def __call__(self, state: ConversationState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Take the settings the input brought, else the run's context, and resolve them."""
        stored = state.get("context") or {}
        # Settings the input brought are ones this node has not taken yet; on a used thread the
        # context channel still holds the last debate's, which only the run's own context replaces.
        brought = bool(stored) and stored != state.get("context_taken")
        given = stored if brought else (plain(runtime.context) or stored)
        marked = {**given, "protocol": self.protocol}
        settings = resolve(context_of(marked, None))
        return {"context": marked, "context_taken": marked, "settings": settings}


async def begin(graph: Any, config: Any, update: dict[str, Any]) -> None:
    """Write a run's settled intake (``Settled.intake``) as the first node's update, so nothing resolves it again.

    It is checkpointed before ``setup`` runs: a stop anywhere after resumes with these settings (their rate
    limits too: every request carries them to the road).
    """
    await graph.aupdate_state(config, update, as_node=INTAKE)


def plain(context: Any) -> dict[str, Any]:
    """Return a run's context as the plain dict state keeps: only the settings it names."""
    if isinstance(context, Context):
        context = context_dict(context)
    items = (context or {}).items() if isinstance(context, dict) else ()
    return {k: v for k, v in items if v not in (None, "") and k != "protocol"}


def setup(state: ConversationState) -> dict[str, Any]:
    """Start the debate on the settings ``intake`` fixed; all after reads them from state."""
    problem = (state.get("problem") or "").strip()
    if not problem:
        raise ValueError("the problem is empty; pass {'problem': '...'}")
    # A thread stopped before setup by a version without ``intake`` holds only its context.
    settings: RunSettings = state.get("settings") or resolve(context_of(state.get("context"), None))
    emit(
        {
            "event": "debate_started",
            "agents": [a["id"] for a in settings["agents"]],
            "rounds": settings["rounds"],
            "protocol": settings["protocol"],
            "people": sum(is_human(a) for a in settings["agents"]),
        }
    )
    opening = briefing_for({**state, "settings": settings}, 1, 0)
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
