"""Issue 40's leaks of text and judgement: what the judge and the moderator wrote is kept whole, and a score
given to no agent's proposal stops nothing.

Scripted at the loopback OpenAI-compatible server: the judge's quality check and the moderator's choice are
the structured answers a model would send.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine import RoundtableContext, compile_roundtable
from tests.support.openai_server import OpenAIServer, serving
from tests.test_stop_rules import Judge, checks
from tests.test_verdict import contributions, debate

LONG_REASON = " ".join(
    f"Point {i}: the bucket refills at rate r{i} and the queue_{i} drains first." for i in range(40)
)[:2000]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=20) as srv:
        yield srv


def test_a_high_score_given_to_no_agent_stops_nothing(server: OpenAIServer, tmp_path: Path) -> None:
    server.tool_args = Judge([{"best": "the committee", "score": 9, "reason": "strong overall"}])
    values = debate(tmp_path, "kiss,security", 3, terminationCondition={"type": "quality"})
    assert values.get("stopped") is None and not values.get("stop_reason")
    assert contributions(server) == 2 + 3 * 2, "every round ran"
    assert len(checks(server, "QualityCheck")) == 2
    for check in values["assessments"]:
        assert check["best"] is None and check["score"] == 9 and check["stop"] is False
    assert "None's" not in repr(values)


def test_the_first_high_score_that_names_an_agent_stops_the_debate(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Judge(
        [
            {"best": "the committee", "score": 9, "reason": "unnamed"},
            {"best": "security", "score": 9, "reason": "named"},
        ]
    )
    values = debate(tmp_path, "kiss,security", 4, terminationCondition={"type": "quality"})
    assert [check["stop"] for check in values["assessments"]] == [False, True]
    assert values["stopped"] == "quality" and values["stop_reason"]["round"] == 2
    assert values["stop_reason"]["reason"] == "security's proposal scored 9 (threshold 8): named"


def test_the_judge_s_2000_character_reason_is_kept_whole(
    server: OpenAIServer, tmp_path: Path
) -> None:
    assert len(LONG_REASON) == 2000
    server.tool_args = Judge([{"best": "kiss", "score": 9, "reason": LONG_REASON}])
    values = debate(tmp_path, "kiss,security", 3, terminationCondition={"type": "quality"})
    assert values["assessments"][0]["reason"] == LONG_REASON
    assert values["stop_reason"]["reason"].endswith(LONG_REASON)


def test_the_moderator_s_2000_character_reason_is_kept_whole(server: OpenAIServer) -> None:
    def moderator(body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "NextSpeaker":
            return {**args, "speaker": "security", "reason": LONG_REASON, "converged": False}
        return args

    server.tool_args = moderator
    graph, config = compile_roundtable(), {"configurable": {"thread_id": "t"}}
    context = RoundtableContext(
        model="openai:test-model", agents="kiss,security", turns=3, order="moderator"
    )
    graph.invoke({"problem": "Design a rate limiter"}, config, context=context)
    moderation = graph.get_state(config).values["moderation"]
    assert moderation["speaker"] == "security" and moderation["reason"] == LONG_REASON
