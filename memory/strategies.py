"""Summarizer strategies: which material a new summary is made from.

A strategy only plans; the summarizer's rules turn the plan into prompts and
the call road (``calls``) asks the model. Both strategies cover
everything they must: a summary stands for every perspective turn before its
``through``, so what a strategy cannot show the model in one call it folds
from the previous summary or reads in chunks. Add a strategy by writing a
class with ``name`` and ``plan`` and registering it in ``STRATEGIES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from debate_engine.memory.budget import turn_cost
from debate_engine.memory.records import SummaryRecord, Turn


@dataclass(frozen=True)
class Plan:
    """The material of one summary."""

    fold: SummaryRecord | None
    """A previous summary folded into the new one, or None."""
    turns: list[Turn]
    """Turns to summarize, oldest first."""
    through: int
    """The new summary covers every perspective turn before this ``seq``."""
    depth: int
    parent_id: str | None
    restarted: bool = False
    """True when the chain hit its depth cap and starts again from a summary of itself."""


class Strategy(Protocol):
    """How a perspective is compressed."""

    name: str

    def plan(
        self,
        uncovered: Sequence[Turn],
        previous: SummaryRecord | None,
        keep: int,
        whole: Sequence[Turn] | None,
    ) -> Plan:
        """Choose the material of the next summary.

        ``uncovered`` is the perspective after ``previous``; the newest ``keep``
        of them stay verbatim. ``whole`` is the entire perspective when it is
        small enough to read in one call, else None.
        """
        ...


def _split(uncovered: Sequence[Turn], keep: int, to_seq: int) -> tuple[list[Turn], int]:
    folded = list(uncovered[: len(uncovered) - keep] if keep else uncovered)
    through = uncovered[len(folded)]["seq"] if len(folded) < len(uncovered) else to_seq
    return folded, through


def _rolling(
    uncovered: Sequence[Turn], previous: SummaryRecord | None, keep: int, max_depth: int
) -> Plan:
    to_seq = uncovered[-1]["seq"] + 1 if uncovered else (previous["through"] if previous else 0)
    folded, through = _split(uncovered, keep, to_seq)
    if previous is None:
        return Plan(fold=None, turns=folded, through=through, depth=0, parent_id=None)
    depth = previous["depth"] + 1
    restarted = depth > max_depth
    return Plan(
        fold=previous,
        turns=folded,
        through=through,
        depth=0 if restarted else depth,
        parent_id=previous["id"],
        restarted=restarted,
    )


class Rolling:
    """Fold the previous summary and the turns since it into a new one."""

    name = "rolling"

    def __init__(self, max_depth: int = 3) -> None:
        self.max_depth = max_depth

    def plan(
        self,
        uncovered: Sequence[Turn],
        previous: SummaryRecord | None,
        keep: int,
        whole: Sequence[Turn] | None,
    ) -> Plan:
        return _rolling(uncovered, previous, keep, self.max_depth)


class Fresh:
    """Re-read the whole perspective when it fits one call; else fold like ``rolling``.

    The seed system re-summarized from the transcript only, which silently
    left out whatever did not fit; folding the previous summary keeps it.
    """

    name = "fresh"

    def __init__(self, max_depth: int = 3) -> None:
        self.max_depth = max_depth

    def plan(
        self,
        uncovered: Sequence[Turn],
        previous: SummaryRecord | None,
        keep: int,
        whole: Sequence[Turn] | None,
    ) -> Plan:
        if whole is not None:
            folded, through = _split(whole, keep, whole[-1]["seq"] + 1 if whole else 0)
            return Plan(fold=None, turns=folded, through=through, depth=0, parent_id=None)
        return _rolling(uncovered, previous, keep, self.max_depth)


STRATEGIES: dict[str, type[Rolling] | type[Fresh]] = {"rolling": Rolling, "fresh": Fresh}
"""The strategies by name: what ``summaryMethod`` / ``summary_method`` may say."""


def get_strategy(name: str, max_depth: int = 3) -> Strategy:
    """Look a strategy up by name, naming the valid ones on failure."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown summary strategy {name!r}; use one of {list(STRATEGIES)}")
    return STRATEGIES[name](max_depth)


def keep_recent(uncovered: Sequence[Turn], preserve: int, room: int) -> int:
    """How many newest turns may stay verbatim: at most ``preserve``, and only what fits ``room`` tokens."""
    kept = 0
    for turn in reversed(uncovered):
        if kept >= preserve or turn_cost(turn) > room:
            break
        room -= turn_cost(turn)
        kept += 1
    return kept
