"""Summarizer strategies: which material a new summary is made from.

A strategy only plans; the summarizer calls the model. Add a strategy by
writing a class with ``name`` and ``plan`` and registering it in
``STRATEGIES``: no node changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memory.perspective import uncovered
from memory.records import SummaryRecord, Turn


@dataclass(frozen=True)
class Plan:
    """The material of one summary."""

    fold: SummaryRecord | None
    """A previous summary folded into the new one (rolling), or None."""
    turns: list[Turn]
    """Turns to summarize, oldest first."""
    depth: int
    parent_id: str | None


class Strategy(Protocol):
    """How a perspective is compressed."""

    name: str

    def plan(self, perspective: Sequence[Turn], previous: SummaryRecord | None, preserve_recent: int) -> Plan:
        """Choose the material of the next summary."""
        ...


def _without_tail(turns: Sequence[Turn], preserve_recent: int) -> list[Turn]:
    return list(turns[: len(turns) - preserve_recent] if preserve_recent else turns)


class Fresh:
    """Re-summarize the whole perspective from the transcript (the seed system's choice)."""

    name = "fresh"

    def plan(self, perspective: Sequence[Turn], previous: SummaryRecord | None, preserve_recent: int) -> Plan:
        return Plan(fold=None, turns=_without_tail(perspective, preserve_recent), depth=0, parent_id=None)


class Rolling:
    """Fold the previous summary and the turns since it into a new one."""

    name = "rolling"

    def plan(self, perspective: Sequence[Turn], previous: SummaryRecord | None, preserve_recent: int) -> Plan:
        fresh = _without_tail(uncovered(perspective, previous), preserve_recent)
        if previous is None:
            return Plan(fold=None, turns=fresh, depth=0, parent_id=None)
        return Plan(fold=previous, turns=fresh, depth=previous["depth"] + 1, parent_id=previous["id"])


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (Fresh(), Rolling())}


def get_strategy(name: str) -> Strategy:
    """Look a strategy up by name, naming the valid ones on failure."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown summary strategy {name!r}; use one of {sorted(STRATEGIES)}") from None
