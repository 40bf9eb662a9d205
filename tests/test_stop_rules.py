"""The judge's check after a round: ``quality`` stops at a rubric score, ``convergence`` when the judge says so.

Scripted at a loopback OpenAI-compatible server: the debaters' positions (prose,
no short answer, so only the judge can compare them) and the judge's check.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine.config.file import ConfigError
from tests.support.fake_replies import wanted_tool
from tests.support.openai_server import OpenAIServer, serving
from tests.test_verdict import Script, contributions, debate


class Judge:
    """The debaters say their piece in prose; the judge's check answers from a list, one per round."""

    def __init__(self, checks: list[dict[str, Any]]) -> None:
        self.checks, self.asked = checks, 0
        self.debaters = Script(
            {"kiss": ["a token bucket"], "security": ["mTLS first"], "testing": ["a queue"]}
        )

    def __call__(self, body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name in ("QualityCheck", "ConvergenceCheck"):
            self.asked += 1
            return {**args, **self.checks[min(self.asked, len(self.checks)) - 1]}
        return {
            **self.debaters(body, name, args),
            "answer": "",
        }  # prose only: nothing to compare exactly


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=20) as srv:
        yield srv


def checks(server: OpenAIServer, name: str) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests if wanted_tool(r["body"]) == name]


def test_a_score_at_the_threshold_stops_the_debate_in_that_round(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Judge(
        [
            {"best": "security", "score": 6, "reason": "gaps"},
            {"best": "kiss", "score": 9, "reason": "complete and tested"},
        ]
    )
    values = debate(
        tmp_path, "kiss,security", 5, terminationCondition={"type": "quality", "threshold": 8}
    )
    assert values["stopped"] == "quality" and values["stop_reason"]["round"] == 2
    assert (
        "kiss's proposal scored 9 (threshold 8): complete and tested"
        in values["stop_reason"]["reason"]
    )
    assert [a["score"] for a in values["assessments"]] == [6, 9] and values["assessments"][1][
        "best"
    ] == "kiss"
    assert (
        contributions(server) == 2 + 2 * 2
    )  # proposals, then the refinements of rounds 1 and 2: no round 3
    prompt = json.dumps(checks(server, "QualityCheck")[0]["messages"])
    assert (
        "Functional completeness: does the solution do everything" in prompt
    )  # the evaluators' rubric
    assert (
        "FINAL-kiss-a token bucket: the design." in prompt
        and "FINAL-security-mTLS first: the design." in prompt
    )


def test_scores_below_the_threshold_run_every_round_with_one_check_a_round(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Judge([{"best": "kiss", "score": 7, "reason": "good, gaps"}])
    values = debate(
        tmp_path, "kiss,security", 3, terminationCondition={"type": "quality"}
    )  # threshold 8
    assert values.get("stopped") is None and contributions(server) == 2 + 3 * 2
    assert [a["round"] for a in values["assessments"]] == [
        1,
        2,
    ]  # none after the last round: synthesis follows
    assert len(checks(server, "QualityCheck")) == 2
    assert values["spend"]["by_phase"]["assess"]["calls"] == 2


def test_the_judge_can_declare_prose_positions_converged(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Judge([{"converged": True, "reason": "they all propose one token bucket"}])
    values = debate(
        tmp_path, "kiss,security,testing", 6, terminationCondition={"type": "convergence"}
    )
    assert (
        values["stopped"] == "convergence" and values["stop_reason"]["round"] == 2
    )  # not before round 2
    assert (
        values["stop_reason"]["by"] == "judge"
        and "one token bucket" in values["stop_reason"]["reason"]
    )
    assert len(checks(server, "ConvergenceCheck")) == 1
    assert contributions(server) == 3 + 2 * 3


def test_a_judge_that_sees_disagreement_lets_every_round_run(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Judge([{"converged": False, "reason": "security still wants mTLS"}])
    values = debate(
        tmp_path, "kiss,security", 4, terminationCondition={"type": "convergence", "minRound": 1}
    )
    assert values.get("stopped") is None and contributions(server) == 2 + 4 * 2
    assert [a["round"] for a in values["assessments"]] == [1, 2, 3]
    assert all(a["converged"] is False for a in values["assessments"])


def test_short_answers_are_compared_without_asking_the_judge(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script({"kiss": ["1"], "security": ["2"]})
    values = debate(tmp_path, "kiss,security", 3, terminationCondition={"type": "convergence"})
    assert values.get("stopped") is None and not checks(server, "ConvergenceCheck")
    assert values["assessments"] == []


@pytest.mark.parametrize(
    ("condition", "fragment"),
    [
        ({"type": "quality", "threshold": 11}, "off the rubric's 1-10 scale"),
        ({"type": "convergence", "threshold": 8}, "applies to 'quality' only"),
    ],
)
def test_a_threshold_that_cannot_work_is_refused(
    tmp_path: Path, condition: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment):
        debate(tmp_path, "kiss,security", 2, terminationCondition=condition)


def test_the_report_and_the_final_line_say_what_the_judge_checked(
    server: OpenAIServer, tmp_path: Path
) -> None:
    from debate_engine.app.reports.markdown import render_report
    from debate_engine.app.reports.verdict_section import verdict_line

    server.tool_args = Judge(
        [
            {"best": "security", "score": 6, "reason": "gaps"},
            {"best": "kiss", "score": 9, "reason": "complete"},
        ]
    )
    values = debate(
        tmp_path, "kiss,security", 4, terminationCondition={"type": "quality", "threshold": 8}
    )
    report = render_report(values)
    assert (
        "- the judge's check after each round (quality): round 1: 6 (security); round 2: 9 (kiss)"
        in report
    )
    assert (
        "- stopped early: quality in round 2: kiss's proposal scored 9 (threshold 8): complete"
        in report
    )
    assert (verdict_line(values) or "").endswith("; stopped early: quality in round 2")
    assert (
        "2 checks by the judge, " in report
    )  # the Figures row counts the checks, which leave no turn
    assert "without a record" not in report


def test_a_round_stop_rule_in_the_roundtable_is_refused_not_ignored(tmp_path: Path) -> None:
    from debate_engine.config.context import context_of
    from debate_engine.config.resolve import resolve

    for rule in ("quality", "convergence"):
        with pytest.raises(ConfigError, match="the roundtable has no rounds"):
            resolve(
                context_of(
                    {"protocol": "roundtable", "turns": 4, "model": "fake", "stop_rule": rule}, None
                )
            )


def test_a_seat_without_a_position_sends_convergence_to_the_judge() -> None:
    from debate_engine.nodes.assess import due

    said = {"position": "p", "reason": "r", "confidence": 50, "answer": "42"}
    turns = [
        {"seq": 0, "id": "refinement:r2:a", "kind": "refinement", "speaker": "a", "position": said},
        {"seq": 1, "id": "refinement:r2:b", "kind": "refinement", "speaker": "b", "position": None},
    ]
    state: Any = {
        "transcript": turns,
        "phase": "refine",
        "round": 2,
        "stopped": None,
        "assessments": [],
        "settings": {
            "rounds": 4,
            "agents": [{"id": "a"}, {"id": "b"}],
            "stop_rule": {"type": "convergence", "min_round": 2},
        },
    }
    assert due(state)  # b stated nothing: the answers cannot be compared exactly
    turns[1]["position"] = said
    assert not due(state)  # every seat states a short answer: compared exactly, no call
