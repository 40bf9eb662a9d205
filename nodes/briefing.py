"""Briefings: notes that enter every perspective at the start of a round (or roundtable turn).

They are turns like any other (kind ``briefing``, everyone's perspective), so
the memory must keep them the way it keeps clarification answers; the memory
probe plants its facts this way.
"""

from __future__ import annotations

from debate_engine.graph.state import ConversationState
from debate_engine.memory import Turn, new_turn

SPEAKER = "organisers"


def briefing_for(state: ConversationState, round_no: int, seq: int) -> list[Turn]:
    """Return the briefing turn that opens ``round_no`` (none when the settings hold no note for it)."""
    note = (state["settings"].get("briefings") or {}).get(str(round_no))
    if not note:
        return []
    return [
        new_turn(
            seq, kind="briefing", round_no=round_no, speaker=SPEAKER, role=SPEAKER, content=note
        )
    ]
