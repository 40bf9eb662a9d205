"""Whose history is whose: the perspective filters, read from the newest turn back.

An agent's perspective is the briefings and clarifications everyone shares,
its own proposals and refinements, and the critiques aimed at it, never a
critique aimed at someone else. The judge's perspective is the whole debate
but the synthesis. In the roundtable every turn is everyone's.

Nothing here scans a whole transcript: views and triggers walk back from the
newest turn to the point their summary covers, so a step's cost depends on
the uncovered tail, not on how long the debate has run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from debate_engine.memory.records import SummaryRecord, Turn

JUDGE_ID = "judge"
SHARED_KINDS = frozenset({"briefing", "clarification", "message"})


def sees(turn: Turn, viewer: str) -> bool:
    """Return True when ``turn`` belongs to ``viewer``'s perspective."""
    kind = turn["kind"]
    if kind in SHARED_KINDS:
        return True
    if viewer == JUDGE_ID:
        return kind != "synthesis"
    if kind in ("proposal", "refinement"):
        return turn["speaker"] == viewer
    return kind == "critique" and turn["target"] == viewer


def newest_first(transcript: Sequence[Turn], viewer: str, since: int = 0) -> Iterator[Turn]:
    """Yield ``viewer``'s turns with ``seq >= since``, newest first, stopping when the caller does."""
    for i in range(len(transcript) - 1, since - 1, -1):
        turn = transcript[i]
        if sees(turn, viewer):
            yield turn


def tail(transcript: Sequence[Turn], viewer: str, since: int = 0) -> list[Turn]:
    """``viewer``'s turns with ``seq >= since``, oldest first."""
    out = list(newest_first(transcript, viewer, since))
    out.reverse()
    return out


def opening_clarifications(transcript: Sequence[Turn]) -> list[Turn]:
    """Return the clarifications that open a transcript (everyone's), read from the start only as far as they go."""
    out: list[Turn] = []
    for turn in transcript:
        if turn["kind"] != "clarification":
            break
        out.append(turn)
    return out


def perspective(transcript: Iterable[Turn], viewer: str) -> list[Turn]:
    """Every turn of ``viewer``'s perspective, oldest first (a full scan: for audits and tests)."""
    return [t for t in transcript if sees(t, viewer)]


def covered_until(summary: SummaryRecord | None) -> int:
    """Return the first ``seq`` a summary does not cover (0 without one)."""
    return summary["through"] if summary else 0


def latest_summaries(
    log: Sequence[SummaryRecord], viewers: Iterable[str]
) -> dict[str, SummaryRecord]:
    """Return the newest successful summary of each viewer, walking the log back only as far as needed."""
    wanted = set(viewers)
    found: dict[str, SummaryRecord] = {}
    for i in range(len(log) - 1, -1, -1):
        if not wanted:
            break
        record = log[i]
        if record["agent_id"] in wanted and record["status"] == "ok":
            found[record["agent_id"]] = record
            wanted.discard(record["agent_id"])
    return found
