"""The vote of a sample: the agents' positions settle the outcome by count, with no judge to pay.

``single`` and ``vote`` (self-consistency) ask each agent once and take the
most held position; a judge would add a call and cannot add a vote. The
outcome is the same verdict a debate records (``nodes/verdict.py``), with
``method`` ``voting``, so a comparison reads every protocol's answer alike.
"""

from __future__ import annotations

from typing import Any

from debate_engine.graph.state import ConversationState, Solution
from debate_engine.nodes.status import advance
from debate_engine.nodes.verdict import verdict


def tally_votes(state: ConversationState) -> dict[str, Any]:
    """Record the winning position as the solution; the sample is done."""
    voting: Any = {**state, "settings": {**state["settings"], "synthesis": "voting"}}
    outcome = verdict(voting, None)
    held = len(outcome["agreement"])
    position = outcome["position"] or "no agent stated a position"
    solution = Solution(
        description=f"{position} (held by {held} of {len(state['settings']['agents'])} agents)",
        key_decisions=[],
        trade_offs=[],
        recommendations=[],
        open_risks=[],
        confidence=0,
        confidence_reasons="",
        structured=False,
        verdict=outcome,
    )
    return {
        "solution": solution,
        "phase": "done",
        "status": advance(state, "done", state.get("round", 1)),
    }
