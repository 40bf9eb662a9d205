"""The typed record of a run: what the report, the figures, the charts and the exports read.

LangGraph hands a debate's values over untyped (``snapshot.values``, a checkpoint's
channels, the server's API), and an ``--output`` JSON file comes back from disk
untyped: ``record_of`` is the one place either becomes a ``RunRecord``, and every
reader from there on is typed. Every key is optional (``total=False``): a debate
stopped before its set-up, or stored by an older version, lacks some, and each
reader takes the default it always took for a missing one. The types are imported
for the checker only: ``debate --help`` loads no langgraph through them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from debate_engine.calls.ledger import Spend
    from debate_engine.config.settings import RunSettings
    from debate_engine.graph.state import (
        Assessment,
        FacetEntry,
        ForkOrigin,
        Moderation,
        Phase,
        Solution,
        Status,
        StopReason,
    )
    from debate_engine.memory.records import SummaryRecord, Turn


class RunRecord(TypedDict, total=False):
    """A debate's values as the app reads them: the channels of ``graph.state.ConversationState``."""

    problem: str
    settings: RunSettings
    transcript: list[Turn]
    summary_log: list[SummaryRecord]
    round: int
    phase: Phase
    turn_count: int
    solution: Solution | None
    status: Status | None
    """None in an export of a debate stopped before its set-up."""
    spend: Spend | None
    stopped: str | None
    stop_reason: StopReason | None
    """Absent in checkpoints made before early stops were explained."""
    assessments: list[Assessment]
    moderation: Moderation | None
    facets: dict[str, dict[str, FacetEntry]]
    forked_from: ForkOrigin | None
    """Absent in a debate that is no fork (and in every checkpoint made before forks)."""


def record_of(values: Mapping[str, Any]) -> RunRecord:
    """Return a debate's untyped values (LangGraph's, or an export's JSON) as the typed record.

    The values are neither copied nor changed: a checkpoint stores plain dicts, which is what
    the record's types describe, so a report of the record is the report of the values.
    """
    return cast("RunRecord", values if isinstance(values, dict) else dict(values))
