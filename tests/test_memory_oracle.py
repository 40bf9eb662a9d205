"""Nothing planted is forgotten: a fact-planting debate against a faithful but verbose summarizer.

The loopback server plays every model (:mod:`tests.support.oracle`): the debaters state 20 facts in their
replies of the planting round, and every summary carries every fact its request shows, at whatever length.
Every later prompt of every debater (each holds the facts in its own perspective: it stated them) and the
judge's synthesis must then hold every fact. A control with summaries off shows the loss, so the test can fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from debate_engine import Context, RoundtableContext
from debate_engine.app.measure.probe.driver import run_probe
from debate_engine.app.measure.probe.facts import make_facts
from tests.support.openai_server import OpenAIServer
from tests.support.oracle import Oracle

WORDS = 300
"""Each debater reply: 300 words, about 400 tokens."""


def probe(
    monkeypatch: pytest.MonkeyPatch,
    context: Context,
    plant: list[int],
    protocol: str = "phases",
    facts: int = 20,
) -> dict[str, Any]:
    planted = make_facts(facts, plant)
    with OpenAIServer(words=WORDS) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-oracle-0000")
        Oracle(planted, WORDS).install(server)
        result = run_probe(context, planted, protocol, plant="replies", every=25)
    assert result["landed"] == facts, "the oracle states every fact it is asked to"
    return result


def kept(result: dict[str, Any]) -> list[tuple[str, str, int, float]]:
    """Every debater prompt that lost a fact: (agent, kind, round, share)."""
    return [
        (p["agent"], p["kind"], p["round"], p["share"])
        for p in result["prompts"]
        if p["share"] < 1.0
    ]


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
def test_every_fact_in_every_later_prompt_and_the_judge_s_over_five_rounds(
    method: str, out: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = probe(monkeypatch, phases(5, out, method), [1])
    assert result["summaries"] >= 3, "the debate outgrew its window: the memory was exercised"
    assert result["prompts"] and kept(result) == []
    assert result["judge"] == 1.0
    # the summaries the debaters were shown hold every planted identifier in their identifiers facet
    assert [r["identifiers_min"] for r in result["rows"]] == [1.0] * len(result["rows"])


def test_without_summaries_the_facts_are_lost_so_the_test_can_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = probe(monkeypatch, phases(5, 512, summarize=False), [1])
    assert result["summaries"] == 0
    assert kept(result) and result["judge"] < 1.0


@pytest.mark.integration  # about 10 s each: `make test`
@pytest.mark.parametrize("out", [512, 1024])
@pytest.mark.parametrize("method", ["rolling", "fresh"])
def test_every_fact_planted_in_rounds_one_and_eight_over_twenty_rounds(
    method: str, out: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = probe(monkeypatch, phases(20, out, method), [1, 8])
    assert kept(result) == [] and result["judge"] == 1.0


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
    assert kept(result) == [] and result["judge"] == 1.0
