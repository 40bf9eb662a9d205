"""Positions, convergence, votes and dissent, scripted at a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from tests.support.fake_replies import wanted_tool
from tests.support.openai_server import OpenAIServer, serving

ROLES = {
    "simplicity advocate": "kiss",
    "security engineer": "security",
    "testing and reliability": "testing",
    "software architect": "architect",
}


def agent_of(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    return next(agent for phrase, agent in ROLES.items() if phrase in system)


class Script:
    """Each agent's answers, one per contribution it makes (its last answer repeats)."""

    def __init__(
        self, answers: dict[str, list[str]], confidence: dict[str, int] | None = None
    ) -> None:
        self.answers, self.confidence = answers, confidence or {}
        self.made: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name != "Contribution":
            return args
        agent = agent_of(body)
        said = self.answers[agent][min(self.made[agent], len(self.answers[agent]) - 1)]
        self.made[agent] += 1
        return {
            **args,
            "reply": f"FINAL-{agent}-{said}: the design.",
            "answer": said,
            "position": f"answer {said}",
            "reason": f"{agent} reasons for {said}",
            "confidence": self.confidence.get(agent, 50),
        }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=20) as srv:
        yield srv


def debate(tmp_path: Path, agents: str, rounds: int, **debate_keys: Any) -> dict[str, Any]:
    path = tmp_path / "debate.json"
    path.write_text(json.dumps({"debate": {"rounds": rounds, **debate_keys}}))
    return compile_debate().invoke(
        {"problem": "What is 6 * 7?"},
        {"configurable": {"thread_id": "t"}},
        context=Context(
            model="openai:test-model", agents=agents, config_file=str(path), summarize=False
        ),
    )


def contributions(server: OpenAIServer) -> int:
    return sum(1 for r in server.requests if wanted_tool(r["body"]) == "Contribution")


def test_agents_that_agree_in_round_2_of_6_stop_after_round_2(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script(
        {"kiss": ["41", "40", "42"], "security": ["42"], "testing": ["7", "9", "42"]}
    )
    values = debate(
        tmp_path, "kiss,security,testing", 6, terminationCondition={"type": "convergence"}
    )
    assert values["stopped"] == "convergence" and values["stop_reason"]["round"] == 2
    assert (
        contributions(server) == 9
    )  # 3 proposals and the refinements of rounds 1 and 2: no round-3 call
    assert max(t["round"] for t in values["transcript"] if t["kind"] == "critique") == 2
    assert values["solution"]["verdict"]["agreement"] == ["kiss", "security", "testing"]


def test_agents_that_never_agree_run_every_round(server: OpenAIServer, tmp_path: Path) -> None:
    server.tool_args = Script({"kiss": ["1"], "security": ["2"], "testing": ["3"]})
    values = debate(
        tmp_path, "kiss,security,testing", 3, terminationCondition={"type": "convergence"}
    )
    assert values.get("stopped") is None and contributions(server) == 3 + 3 * 3


def test_a_vote_of_a_a_b_settles_a_with_the_b_agent_kept_as_dissent(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script({"kiss": ["42"], "security": ["42.0"], "testing": ["41"]})
    values = debate(tmp_path, "kiss,security,testing", 1, synthesisMethod="voting")
    verdict = values["solution"]["verdict"]
    assert verdict["method"] == "voting" and verdict["answer"] == "42"  # 42 and 42.0 are one answer
    assert verdict["agreement"] == ["kiss", "security"]
    assert verdict["dissent"] == [
        {
            "agent": "testing",
            "position": "answer 41",
            "reason": "testing reasons for 41",
            "answer": "41",
        }
    ]
    assert verdict["confidence"]["value"] == 67 and "2 of 3" in verdict["confidence"]["how"]
    judge_prompt = server.prompts()[-1]
    assert "The agents voted: the winning position, held by 2 of 3, is: answer 42" in judge_prompt


def test_a_two_two_tie_is_broken_by_the_summed_confidence(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script(
        {"architect": ["A"], "kiss": ["A"], "security": ["B"], "testing": ["B"]},
        confidence={"architect": 90, "kiss": 10, "security": 60, "testing": 60},
    )
    values = debate(tmp_path, "architect,kiss,security,testing", 1, synthesisMethod="voting")
    verdict = values["solution"]["verdict"]
    assert verdict["answer"] == "B" and verdict["agreement"] == [
        "security",
        "testing",
    ]  # 120 against 100


def test_a_merge_shows_the_judge_the_final_refinements_and_no_critique(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script({"kiss": ["1", "2"], "security": ["3", "4"]})
    values = debate(tmp_path, "kiss,security", 1, synthesisMethod="merge")
    judge_prompt = server.prompts()[-1]
    assert (
        "FINAL-kiss-2: the design." in judge_prompt
        and "FINAL-security-4: the design." in judge_prompt
    )
    assert (
        "FINAL-kiss-1" not in judge_prompt
    )  # the proposals the refinements replaced are not shown either
    critiques = [t["content"] for t in values["transcript"] if t["kind"] == "critique"]
    assert critiques and not any(c in judge_prompt for c in critiques)


def test_a_change_toward_the_majority_after_a_critique_is_recorded_as_conformity(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script({"kiss": ["A", "B"], "security": ["B"], "testing": ["B"]})
    values = debate(tmp_path, "kiss,security,testing", 1)
    refinement = next(t for t in values["transcript"] if t["id"] == "refinement:r1:kiss")
    change = refinement["position"]["change"]
    assert (
        change["from"] == "answer A"
        and change["toward_majority"] is True
        and change["from_turn"] == "proposal:r1:kiss"
    )
    assert change["after"] == ["critique:r1:security->kiss", "critique:r1:testing->kiss"]
    steady = next(t for t in values["transcript"] if t["id"] == "refinement:r1:security")
    assert "change" not in steady["position"]


def test_the_report_shows_positions_by_round_and_the_verdict_with_every_dissent(
    server: OpenAIServer, tmp_path: Path
) -> None:
    from debate_engine.app.reports.markdown import render_report
    from debate_engine.app.reports.verdict_section import verdict_line

    server.tool_args = Script({"kiss": ["A", "B"], "security": ["B"], "testing": ["B", "C"]})
    values = debate(tmp_path, "kiss,security,testing", 1, synthesisMethod="voting")
    report = render_report(values)
    assert "## Positions" in report and "| agent | proposed | round 1 |" in report
    assert "| kiss | answer A · 50 | " in report
    assert "answer B · 50 (changed, toward the majority)" in report
    assert "## Verdict" in report and "agreement: 2 of 3 agents (kiss, security)" in report
    assert "**Dissent: testing**: answer C" in report and "> testing reasons for C" in report
    assert verdict_line(values) == "verdict (voting): 2 of 3 agents agree, 1 dissent"


def test_without_the_full_history_the_judge_sees_the_final_round_only(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.tool_args = Script({"kiss": ["1", "2"], "security": ["3", "4"]})
    values = debate(tmp_path, "kiss,security", 1, includeFullHistory=False)
    judge_prompt = server.prompts()[-1]
    assert values["settings"]["judge_history"] == "final_round"
    assert "FINAL-kiss-2: the design." in judge_prompt and "FINAL-kiss-1" not in judge_prompt
    assert not any(
        t["content"] in judge_prompt for t in values["transcript"] if t["kind"] == "critique"
    )


def test_the_final_lines_and_show_print_the_verdict(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from debate_engine.app.cli.main import main

    server.tool_args = Script({"kiss": ["7"], "security": ["7"], "testing": ["8"]})
    path = tmp_path / "debate.json"
    path.write_text(json.dumps({"debate": {"rounds": 1, "synthesisMethod": "voting"}}))
    db = str(tmp_path / "d.sqlite")
    argv = [
        "run",
        "--model",
        "openai:test-model",
        "--agents",
        "kiss,security,testing",
        "--config",
        str(path),
        "--db",
        db,
        "--thread-id",
        "v",
        "--no-summary",
        "What is 6 + 1?",
    ]
    assert main(argv) == 0
    assert "verdict (voting): 2 of 3 agents agree, 1 dissent" in capsys.readouterr().err
    assert main(["show", "v", "--db", db]) == 0
    assert "verdict (voting): 2 of 3 agents agree, 1 dissent" in capsys.readouterr().err
