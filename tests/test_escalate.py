"""Escalate: vote first, debate only on a split. Scripted at a loopback OpenAI-compatible server, which counts
every request: a unanimous vote sends no judge call, a split debates with the votes as round 1's proposals,
and a kill between the votes and the debate resumes into the debate with no vote asked again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.protocols import protocol
from debate_engine.app.measure.compare.tasks import builtin_tasks
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import seats
from debate_engine.errors import InputError
from debate_engine.nodes.escalate import ballot_of
from debate_engine.nodes.routes import after_setup, after_vote, route
from debate_engine.nodes.verdict import verdict
from debate_engine.providers.factory import ModelConfigError, chat_model, parse_spec
from tests.conftest import make_turn
from tests.support.fake_replies import wanted_tool
from tests.support.openai_server import OpenAIServer, serving
from tests.test_graph_routes import profile
from tests.test_verdict import Script

VOTERS = "kiss,security,testing"
SPLIT = {"kiss": ["42"], "security": ["42"], "testing": ["41"]}
"""A 2-1 vote, every agent holding its answer through the debate."""
PROPOSE = "Propose a solution to the problem above"
"""The propose task's opening: every vote is asked with it."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=20) as srv:
        yield srv


def context(**given: Any) -> Context:
    return Context(
        model="openai:test-model", agents=VOTERS, summarize=False, **{"votes": 3, **given}
    )


def asked(server: OpenAIServer, tool: str) -> int:
    return sum(1 for r in server.requests if wanted_tool(r["body"]) == tool)


def votes_asked(server: OpenAIServer) -> int:
    return sum(PROPOSE in p for p in server.prompts())


def test_a_unanimous_vote_is_the_verdict_with_no_judge_call_sent(server: OpenAIServer) -> None:
    server.tool_args = Script({"kiss": ["42"], "security": ["42.0"], "testing": ["42"]})
    values = compile_debate().invoke(
        {"problem": "What is 6 * 7?"},
        {"configurable": {"thread_id": "t"}},
        context=context(rounds=3),
    )
    assert len(server.requests) == 3 == votes_asked(server)  # three votes; no judge, no debate
    assert asked(server, "JudgeSolution") == 0
    assert [t["kind"] for t in values["transcript"]] == ["proposal"] * 3
    verdict = values["solution"]["verdict"]
    assert verdict["ballot"]["mark"] == "settled by a unanimous vote of 3"
    assert verdict["ballot"]["outcome"] == "settled" and verdict["ballot"]["split"] == [3]
    assert verdict["method"] == "voting" and verdict["answer"] == "42"
    assert verdict["agreement"] == ["kiss", "security", "testing"] and verdict["dissent"] == []
    assert "settled by a unanimous vote of 3" in verdict["confidence"]["how"]
    assert values["solution"]["description"] == "answer 42 (settled by a unanimous vote of 3)"
    assert values["status"]["phase"] == "done" and values["spend"]["total"]["calls"] == 3


def test_a_split_vote_escalates_and_its_votes_are_round_1s_proposals(
    server: OpenAIServer,
) -> None:
    server.tool_args = Script(SPLIT)
    values = asyncio.run(
        compile_debate().ainvoke(
            {"problem": "What is 6 * 7?"},
            {"configurable": {"thread_id": "t"}},
            context=context(rounds=1),
        )
    )
    assert votes_asked(server) == 3  # never asked again: the debate goes on from them
    assert asked(server, "Contribution") == 3 + 3  # the votes, then round 1's refinements
    assert asked(server, "JudgeSolution") == 1
    kinds = [(t["kind"], t["round"]) for t in values["transcript"]]
    assert kinds == [("proposal", 1)] * 3 + [("critique", 1)] * 6 + [("refinement", 1)] * 3 + [
        ("synthesis", 1)
    ]
    proposals = {t["speaker"]: t["content"] for t in values["transcript"][:3]}
    assert proposals == {a: f"FINAL-{a}-{said[0]}: the design." for a, said in SPLIT.items()}
    ballot = values["solution"]["verdict"]["ballot"]
    assert ballot["mark"] == "escalated: split 2-1" and ballot["outcome"] == "escalated"
    assert "escalated: split 2-1" in values["solution"]["verdict"]["confidence"]["how"]


def test_windows_settle_at_the_first_that_agrees_and_each_vote_is_blind(
    server: OpenAIServer,
) -> None:
    server.tool_args = Script({"kiss": ["7"], "security": ["7"], "testing": ["9"]})
    values = compile_debate().invoke(
        {"problem": "What is 3 + 4?"},
        {"configurable": {"thread_id": "t"}},
        context=context(window=2),
    )
    assert votes_asked(server) == 2 and len(server.requests) == 2  # testing was never asked
    ballot = values["solution"]["verdict"]["ballot"]
    assert ballot["mark"] == "settled by a unanimous window of 2, 2 of 3 votes drawn"
    assert ballot["settled_by"] == ["kiss", "security"]


def test_a_later_window_never_sees_the_votes_drawn_before_it(server: OpenAIServer) -> None:
    server.tool_args = Script({"kiss": ["1"], "security": ["2"], "testing": ["3"]})
    values = compile_debate().invoke(
        {"problem": "Pick a number"},
        {"configurable": {"thread_id": "t"}},
        context=context(window=2, rounds=1),
    )
    votes = [p for p in server.prompts() if PROPOSE in p]
    assert len(votes) == 3 and not any("FINAL-" in p for p in votes)  # no vote saw another's
    ballot = values["solution"]["verdict"]["ballot"]
    assert ballot["mark"] == "escalated: split 1-1-1, no window of 2 agreed"


class DiesAfterTheVotes(InMemorySaver):
    """A saver whose process is killed ``later`` storage operations after the vote's turns were written."""

    def __init__(self, later: int) -> None:
        super().__init__()
        self.later: int | None = None
        self.armed_at = later

    def _tick(self) -> None:
        if self.later is not None:
            if self.later <= 0:
                raise Killed
            self.later -= 1

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self._tick()
        return super().put(*args, **kwargs)

    def put_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
        self._tick()
        super().put_writes(config, writes, *args, **kwargs)
        voted = any(
            channel == "transcript"
            and isinstance(value, list)  # setup's is an Overwrite
            and any(t["kind"] == "proposal" for t in value)
            for channel, value in writes
        )
        if voted and self.later is None:
            self.later = self.armed_at

    def revive(self) -> None:
        self.later, self.armed_at = None, 10**9


class Killed(BaseException):
    """The process died here."""


@pytest.mark.parametrize("later", [0, 1, 2, 3])
def test_a_kill_between_the_votes_and_the_debate_resumes_with_no_vote_asked_again(
    server: OpenAIServer, later: int
) -> None:
    server.tool_args = Script(SPLIT)
    config: Any = {"configurable": {"thread_id": "t"}}
    saver = DiesAfterTheVotes(later)
    with pytest.raises(Killed):
        compile_debate(checkpointer=saver).invoke(
            {"problem": "What is 6 * 7?"}, config, context=context(rounds=1), durability="sync"
        )
    # killed after the votes' writes, before any refinement (critiques are prose) or the judge
    assert votes_asked(server) == 3 == asked(server, "Contribution")
    assert asked(server, "JudgeSolution") == 0
    saver.revive()
    resumed = asyncio.run(
        compile_debate(checkpointer=saver).ainvoke(None, config, durability="sync")
    )
    assert votes_asked(server) == 3  # the votes came back from the checkpoint
    assert [t["kind"] for t in resumed["transcript"]].count("proposal") == 3
    assert resumed["solution"]["verdict"]["ballot"]["mark"] == "escalated: split 2-1"
    whole = compile_debate().invoke(
        {"problem": "What is 6 * 7?"}, config, context=context(rounds=1)
    )
    assert [(t["id"], t["content"]) for t in resumed["transcript"]] == [
        (t["id"], t["content"]) for t in whole["transcript"]
    ]


def test_the_cli_runs_escalate_and_refuses_a_vote_it_cannot_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "e.json"
    db = str(tmp_path / "d.sqlite")
    code = main(
        ["run", "--model", "fake:solve=1.0", "--protocol", "escalate", "--votes", "5"]
        + ["--agents", "kiss,security", "--quiet", "--db", db, "--output", str(out), "2+3*4?"]
    )
    assert code == 0
    state = json.loads(out.read_text())
    assert [a["id"] for a in state["agents"]] == [
        "kiss-1",
        "security-1",
        "kiss-2",
        "security-2",
        "kiss-3",
    ]
    assert state["settings"]["escalate"] == {"votes": 5, "window": 5}
    assert state["solution"]["verdict"]["ballot"]["mark"] == "settled by a unanimous vote of 5"
    capsys.readouterr()
    for bad, said in [
        (["--votes", "4"], "votes: 4 is even"),
        (["--votes", "0"], "votes: 0 is out of range"),
        (["--votes", "-3"], "votes: -3 is out of range"),
        (["--votes", "3", "--window", "5"], "window: 5 is more than the 3 votes"),
    ]:
        assert main(["run", "--model", "fake", "--protocol", "escalate", *bad, "p"]) == 2, bad
        assert said in capsys.readouterr().err
    assert main(["run", "--model", "fake", "--votes", "3", "p"]) == 2
    assert "add --protocol escalate" in capsys.readouterr().err


def test_the_vote_is_fixed_in_the_settings_and_refused_where_it_cannot_run() -> None:
    settings = resolve(Context(model="fake", votes=3))
    assert [a["id"] for a in settings["agents"]] == ["architect", "performance", "security"]
    assert settings["escalate"] == {"votes": 3, "window": 3}
    assert "escalate" not in resolve(Context(model="fake"))
    for given, said in [
        ({"window": 2}, "window: draws the answers of a vote"),
        ({"votes": 3, "humans": "pat"}, "a person's seat cannot vote"),
    ]:
        with pytest.raises(ValueError, match=said):
            resolve(Context(model="fake", **given))


def test_seats_are_taken_in_turn_with_an_id_per_seat_of_an_agent_seated_twice() -> None:
    agents: Any = [{"id": a, "name": a.title()} for a in ("kiss", "security")]
    assert [s["id"] for s in seats(agents, 3)] == ["kiss-1", "security", "kiss-2"]
    assert [s["name"] for s in seats(agents, 3)] == ["Kiss 1", "Security", "Kiss 2"]
    assert seats(agents, 2) == agents and [s["id"] for s in seats(agents, 1)] == ["kiss"]


def test_the_agreeing_window_wins_the_verdict_where_the_drawn_votes_tie() -> None:
    state = plain_state(["x", "y", "x", "y", "a", "a"], window=2, voters=7)
    outcome = verdict(state, None)
    assert outcome["answer"] == "a" and outcome["agreement"] == ["v4", "v5"]  # 2-2-2 over all drawn
    assert outcome["ballot"]["mark"] == "settled by a unanimous window of 2, 6 of 7 votes drawn"


def plain_state(
    answers: list[str | None], window: int, stopped: str | None = None, voters: int = 5
) -> Any:
    """Return an escalate debate's state after its voters ``v0``, ``v1``, ... answered (None: no position)."""
    transcript = []
    for i, answer in enumerate(answers):
        turn = make_turn(i, speaker=f"v{i}", kind="proposal", round_no=1)
        turn["position"] = (
            None
            if answer is None
            else {"position": answer, "answer": answer, "reason": "", "confidence": 50}
        )
        transcript.append(turn)
    return {
        "phase": "propose",
        "round": 1,
        "stopped": stopped,
        "transcript": transcript,
        "summary_log": [],
        "summarized_for": "",
        "settings": {
            "agents": [profile(f"v{i}") for i in range(voters)],
            "judge": profile("judge"),
            "rounds": 2,
            "max_concurrency": 0,
            "escalate": {"votes": voters, "window": window},
        },
    }


@pytest.mark.parametrize(
    ("answers", "window", "outcome", "route", "mark"),
    [
        (["a"] * 5, 5, "settled", "settle", "settled by a unanimous vote of 5"),
        (["a", "a", "a", "b", "a"], 5, "escalated", "critique", "escalated: split 4-1"),
        (["a", "b"], 2, "drawing", "vote", "stopped in the vote: 2 of 5 votes drawn"),
        (["a", "b", "c", "c"], 2, "settled", "settle", "unanimous window of 2, 4 of 5"),
        # a short last window (1 of 2) never settles: one answer agrees with itself
        (["a", "b", "c", "d", "a"], 2, "escalated", "critique", "split 2-1-1-1, no window"),
        # an answer with no position agrees with none, not even another without one
        ([None, None, "a", "a", "a"], 5, "escalated", "critique", "escalated: split 3-1-1"),
    ],
)
def test_the_ballot_and_the_router_after_the_vote_are_pure(
    answers: list[str | None], window: int, outcome: str, route: str, mark: str
) -> None:
    state = plain_state(answers, window)
    ballot = ballot_of(state)
    assert ballot is not None and ballot["outcome"] == outcome and mark in ballot["mark"]
    assert after_vote(state) == route
    assert after_vote(plain_state(answers, window, stopped="budget")) == "synthesize"


def test_setup_leads_to_the_vote_in_an_escalate_debate() -> None:
    state = plain_state([], 5)
    assert after_setup({**state, "phase": "setup", "round": 0}) == "vote"
    asking = {**state, "settings": {**state["settings"], "clarify": True, "max_questions": 2}}
    assert after_setup({**asking, "phase": "setup", "round": 0}) == "clarify"
    assert route({**asking, "phase": "clarify", "round": 0, "transcript": []}) == "vote"
    assert ballot_of({**state, "settings": {**state["settings"], "escalate": None}}) is None


def test_the_spend_cap_holds_through_the_vote_and_the_debate(tmp_path: Path) -> None:
    values = compile_debate().invoke(
        {"problem": "What is 12+34*56?"},
        {"configurable": {"thread_id": "split-3"}},
        context=Context(model="fake:solve=0.5,words=40", rounds=3, votes=3, max_tokens=9000),
    )
    assert values["stopped"] == "budget" and values["status"]["tokens"] <= 9000
    kinds = [t["kind"] for t in values["transcript"]]
    assert kinds.count("proposal") == 3 and kinds[-1] == "synthesis"
    assert values["solution"]["verdict"]["ballot"]["outcome"] == "escalated"


def test_a_question_draws_its_difficulty_from_the_spec_seeded_by_the_question_alone() -> None:
    ranged, mixed = chat_model("fake:solve=0.2-0.9"), chat_model("fake:solve=0.95/0.3")
    drawn = [ranged.solve_probability(f"{i}+2*3") for i in range(400)]
    assert all(0.2 <= p <= 0.9 for p in drawn) and abs(sum(drawn) / 400 - 0.55) < 0.03
    assert ranged.solve_probability("7+2*3") == ranged.solve_probability("7 + 2 * 3")
    assert {mixed.solve_probability(f"{i}+2*3") for i in range(50)} == {0.95, 0.3}
    with pytest.raises(ModelConfigError, match="a range A-B of them"):
        parse_spec("fake:solve=0.9-0.2")


def escalate_runs(model: str, tasks: int) -> dict[str, Any]:
    """Return ``debate compare``'s figures for escalate (k = 3, one round) on ``tasks`` built-in tasks."""
    comparison = Comparison(model, {"debate": compile_debate()}, jobs=16, quiet=True)
    chosen = protocol("escalate", Context(model=model, rounds=1), "generalist", 3)
    found = builtin_tasks(f"builtin:arithmetic:{tasks}")
    runs = asyncio.run(run_protocol(comparison, chosen, found, 1))
    return {**results.summarise("escalate", chosen.label, runs, None, tasks), "records": runs}


def test_compare_runs_escalate_and_reports_the_share_it_escalated() -> None:
    found = escalate_runs("fake:solve=0.95/0.3", 12)
    assert found["label"] == "escalate-3" and found["runs"] == 12
    split = [r["escalated"] for r in found["records"]]
    assert set(split) == {True, False} and found["escalated"]["share"] == sum(split) / 12
    assert " escalated, " in results.markdown([found], "t")
    with pytest.raises(InputError, match="odd"):
        protocol("escalate", Context(model="fake"), "generalist", 4)


def agreement(low: float, high: float, k: int = 3) -> float:
    """Return E[p^k + (1-p)^k] for p uniform from ``low`` to ``high``: the chance k voters agree."""
    return (high ** (k + 1) - low ** (k + 1) + (1 - low) ** (k + 1) - (1 - high) ** (k + 1)) / (
        (k + 1) * (high - low)
    )


@pytest.mark.integration  # 200 tasks, about 8 s of CPU each: `make test`
@pytest.mark.parametrize(
    ("spec", "agree"),
    [("0.95/0.3", (0.95**3 + 0.05**3 + 0.3**3 + 0.7**3) / 2), ("0.3-0.9", agreement(0.3, 0.9))],
)
def test_the_escalated_share_matches_one_minus_the_expected_agreement(
    spec: str, agree: float
) -> None:
    found = escalate_runs(f"fake:solve={spec}", 200)
    low, high = found["escalated"]["interval"]
    assert found["runs"] == 200 and low <= 1 - agree <= high, (found["escalated"], 1 - agree)
