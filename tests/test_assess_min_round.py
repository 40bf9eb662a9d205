"""``terminationCondition.minRound`` holds under ``quality`` as under ``convergence``: no check, so no stop, before it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine.nodes.assess import due
from tests.support.openai_server import OpenAIServer, serving
from tests.test_stop_rules import Judge, checks
from tests.test_verdict import contributions, debate


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=20) as srv:
        yield srv


def test_a_quality_stop_waits_for_min_round_and_comes_in_it(
    server: OpenAIServer, tmp_path: Path
) -> None:
    """The judge would stop the debate at any check: the first one comes after round 3, and stops it there."""
    server.tool_args = Judge([{"best": "kiss", "score": 9, "reason": "complete"}])
    values = debate(
        tmp_path,
        "kiss,security",
        4,
        terminationCondition={"type": "quality", "minRound": 3, "threshold": 5},
    )
    assert values["settings"]["stop_rule"]["min_round"] == 3
    assert values["stopped"] == "quality" and values["stop_reason"]["round"] == 3
    assert [a["round"] for a in values["assessments"]] == [3] and len(
        checks(server, "QualityCheck")
    ) == 1
    assert (
        contributions(server) == 2 + 3 * 2
    )  # proposals, then the refinements of rounds 1-3: no round 4


def state_after(round_no: int, rule: dict[str, Any]) -> Any:
    """Return the state right after round ``round_no``'s refinements of a 4-round debate."""
    return {
        "transcript": [],
        "phase": "refine",
        "round": round_no,
        "stopped": None,
        "assessments": [],
        "settings": {"rounds": 4, "agents": [{"id": "a"}, {"id": "b"}], "stop_rule": rule},
    }


@pytest.mark.parametrize("round_no,checked", [(1, False), (2, False), (3, True)])
def test_the_quality_check_is_due_from_min_round_on(round_no: int, checked: bool) -> None:
    assert (
        due(state_after(round_no, {"type": "quality", "min_round": 3, "threshold": 5})) is checked
    )


def test_a_quality_rule_that_names_no_min_round_checks_every_round() -> None:
    assert due(state_after(1, {"type": "quality", "threshold": 5}))
