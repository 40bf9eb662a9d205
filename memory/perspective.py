"""Whose history is whose: the perspective filters.

An agent's perspective is the problem's clarifications, its own proposals and
refinements, and the critiques aimed at it, never a critique aimed at someone
else. A proposal carried over from the previous refinement is left out: the
refinement already stands for it. The judge's perspective is the clarifications and the final round's
proposals and refinements.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memory.records import SummaryRecord, Turn

JUDGE_ID = "judge"


def agent_perspective(transcript: Iterable[Turn], agent_id: str) -> list[Turn]:
    """Return the turns that belong to ``agent_id``'s history, oldest first."""
    out: list[Turn] = []
    for turn in transcript:
        kind = turn["kind"]
        if kind == "clarification":
            out.append(turn)
        elif kind in ("proposal", "refinement") and turn["speaker"] == agent_id:
            # A carried-over proposal repeats the refinement it copies: show it once.
            if not turn.get("carried_from"):
                out.append(turn)
        elif kind == "critique" and turn["target"] == agent_id:
            out.append(turn)
    return out


def judge_perspective(transcript: Sequence[Turn], final_round: int) -> list[Turn]:
    """Return the clarifications and the final round's proposals and refinements."""
    return [
        t
        for t in transcript
        if t["kind"] == "clarification" or (t["round"] == final_round and t["kind"] in ("proposal", "refinement"))
    ]


def perspective_for(transcript: Sequence[Turn], agent_id: str, final_round: int) -> list[Turn]:
    """Dispatch to the agent's or the judge's filter."""
    if agent_id == JUDGE_ID:
        return judge_perspective(transcript, final_round)
    return agent_perspective(transcript, agent_id)


def latest_summary(log: Iterable[SummaryRecord], agent_id: str) -> SummaryRecord | None:
    """The newest successful summary of ``agent_id``, if any."""
    found: SummaryRecord | None = None
    for record in log:
        if record["agent_id"] == agent_id and record["status"] == "ok":
            found = record
    return found


def uncovered(perspective: Sequence[Turn], summary: SummaryRecord | None) -> list[Turn]:
    """The turns of a perspective that ``summary`` does not stand for."""
    if summary is None:
        return list(perspective)
    covered = set(summary["covered_turn_ids"])
    return [t for t in perspective if t["id"] not in covered]
