"""Nothing planted is forgotten, whatever its shape: a fact-planting debate against a faithful but verbose summarizer.

The loopback server plays every model (:mod:`tests.support.oracle`): the debaters state 20 facts in their
replies of the planting round (every agent all of them, or each agent its own), facts of every shape users
state: identifiers, plain words, a bare number with its subject, a person's name, a dollar amount. Every
summary carries every fact its request shows, in its narrative and in as many facet items as the schema
allows, and runs to most of its output allowance whatever length it was asked. Every later prompt of every
debater and the judge's synthesis must then hold every fact. Plain words are lifted by no rule: they reach
the prompts only through the summaries. A control with summaries off shows the loss, so the test can fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from debate_engine import Context, RoundtableContext
from debate_engine.app.measure.probe.driver import run_probe
from debate_engine.app.measure.probe.facts import SHAPES, Fact, contains, make_facts
from tests.support.openai_server import OpenAIServer
from tests.support.oracle import Oracle

AGENTS = ("architect", "performance", "security")
LIFTED = ("identifier", "number", "name", "money")
"""The shapes the identifier lifter keeps by code (``memory.identifiers``); plain words rest on the summaries."""
WORDS = 300
"""Each debater reply: 300 words, about 400 tokens."""


def probe(
    monkeypatch: pytest.MonkeyPatch,
    context: Context,
    plant: list[int],
    protocol: str = "phases",
    facts: int = 20,
    per_agent: bool = False,
) -> dict[str, Any]:
    planted = make_facts(facts, plant, speakers=AGENTS if per_agent else ())
    with OpenAIServer(words=WORDS) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-oracle-0000")
        Oracle(planted, WORDS).install(server)
        result = run_probe(context, planted, protocol, plant="replies", every=25)
    assert result["landed"] == facts, "the oracle states every fact it is asked to"
    assert {f.shape for f in planted} == set(SHAPES)
    return result


def kept(result: dict[str, Any]) -> list[tuple[str, str, int, float]]:
    """Every debater prompt that lost a fact: (agent, kind, round, share)."""
    return [
        (p["agent"], p["kind"], p["round"], p["share"])
        for p in result["prompts"]
        if p["share"] < 1.0
    ]


def unlifted(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(summary, fact) for every fact of a lifted shape a stored summary covers but its identifiers facet lacks."""
    facts = [Fact(f["key"], f["value"], f["round"], f["shape"]) for f in result["fact_list"]]
    return [
        (s["id"], f.value)
        for s in result["summary_records"]
        for f in facts
        if f.shape in LIFTED
        and contains(s["text"], f)
        and not contains(" | ".join(s["facets"].get("identifiers") or []), f)
    ]


def assert_nothing_lost(result: dict[str, Any]) -> None:
    assert result["prompts"] and kept(result) == []
    assert result["judge"] == 1.0
    assert result["judge_by_shape"] == {shape: 1.0 for shape in SHAPES}
    assert unlifted(result) == [], (
        "what the lifter keeps is in the identifiers facet of every summary"
    )


def phases(rounds: int, out: int, method: str = "rolling", summarize: bool = True) -> Context:
    return Context(
        model="openai:test-model",
        rounds=rounds,
        agents="architect,performance,security",
        context_window=4096,
        max_output_tokens=out,
        summary_method=method,
        summarize=summarize,
    )


@pytest.mark.parametrize("out", [512, 1024])
@pytest.mark.parametrize("method", ["rolling", "fresh"])
def test_every_fact_of_every_shape_in_every_later_prompt_and_the_judge_s_over_five_rounds(
    method: str, out: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = probe(monkeypatch, phases(5, out, method), [1])
    assert result["summaries"] >= 3, "the debate outgrew its window: the memory was exercised"
    assert_nothing_lost(result)


@pytest.mark.parametrize("method", ["rolling", "fresh"])
def test_each_agent_s_own_facts_planted_in_rounds_one_and_three_reach_every_prompt_and_the_judge(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = probe(monkeypatch, phases(5, 512, method), [1, 3], per_agent=True)
    assert result["summaries"] >= 3
    assert_nothing_lost(result)


def test_without_summaries_the_facts_are_lost_so_the_test_can_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = probe(monkeypatch, phases(5, 512, summarize=False), [1])
    assert result["summaries"] == 0
    assert kept(result) and result["judge"] < 1.0 and result["judge_by_shape"]["words"] < 1.0


@pytest.mark.integration  # about 10 s each: `make test`
@pytest.mark.parametrize("out", [512, 1024])
@pytest.mark.parametrize("method", ["rolling", "fresh"])
def test_every_fact_planted_in_rounds_one_and_eight_over_twenty_rounds(
    method: str, out: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = probe(monkeypatch, phases(20, out, method), [1, 8])
    assert_nothing_lost(result)


@pytest.mark.integration  # about 25 s each: `make test`
@pytest.mark.parametrize("out", [512, 1024])
def test_every_fact_over_a_300_turn_roundtable(out: int, monkeypatch: pytest.MonkeyPatch) -> None:
    context = RoundtableContext(
        model="openai:test-model",
        turns=300,
        agents="architect,performance,security",
        context_window=4096,
        max_output_tokens=out,
    )
    result = probe(monkeypatch, context, [1], protocol="roundtable")
    assert result["summaries"] >= 5
    assert_nothing_lost(result)
