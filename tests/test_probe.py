"""The memory probe on the fake model: facts planted as briefings, measured per tier, and the quiz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate_engine import Context
from debate_engine.app.cli import main
from debate_engine.app.probe import run_probe
from debate_engine.app.probe_facts import briefings, contains, landed, make_facts, reply_notes
from debate_engine.app.probe_measure import render


def test_facts_are_distinct_unguessable_and_spread_over_the_planting_rounds() -> None:
    facts = make_facts(20, [1, 8])
    assert len({f.value for f in facts}) == 20 and len({f.key for f in facts}) == 20
    assert [f.round for f in facts].count(1) == 10 and [f.round for f in facts].count(8) == 10
    notes = briefings(facts)
    assert set(notes) == {"1", "8"} and all(f.sentence in notes[str(f.round)] for f in facts)
    assert make_facts(20, [1, 8]) == facts and make_facts(20, [1, 8], seed=8) != facts


def test_a_phase_debate_probe_measures_every_tier() -> None:
    facts = make_facts(6, [1])
    result = run_probe(Context(model="fake:words=60", rounds=3, agents="architect,security"), facts, "phase")
    assert [r["round"] for r in result["rows"]] == [1, 2, 3]
    assert all(r["transcript_min"] == 1.0 for r in result["rows"])  # the transcript never forgets
    # nothing is summarized in round 1 with an 8K window: the briefing is verbatim in every view
    assert result["rows"][0]["view_min"] == 1.0 and result["rows"][0]["summary_min"] == 0
    assert set(result["quiz"]) == {"architect", "security"} and result["summaries"] >= 0


def test_view_as_sent_is_a_search_of_the_prompt_a_real_server_received(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.openai_server import OpenAIServer

    facts = make_facts(4, [1])
    with OpenAIServer(words=30) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe-0000")
        result = run_probe(Context(model="openai:test-model", rounds=2, agents="architect,security"), facts, "phase")
        received = server.prompts()
    debate_prompts = [p for p in received if "Answer each question" not in p]
    found_by_server = sum(contains(p, f) for p in debate_prompts for f in facts)
    assert found_by_server > 0
    # round 1: every agent's proposal/critique/refinement prompts carry the briefing verbatim
    assert result["rows"][0]["view_min"] == 1.0
    quiz_prompts = [p for p in received if "Answer each question" in p]
    assert len(quiz_prompts) == 2  # one quiz call per agent


def test_a_roundtable_probe_reports_by_summary_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "probe.json"
    code = main(["probe", "--model", "fake:words=20", "--protocol", "roundtable", "--turns", "120", "--facts", "5",
                 "--plant-rounds", "1", "--quiet", "--output", str(out)])
    assert code == 0
    report = capsys.readouterr().out
    assert report.startswith("# Memory probe: 5 facts planted") and "| agent | quiz accuracy |" in report
    data = json.loads(out.read_text())
    assert [r["round"] for r in data["rows"]] == [1, 51, 101, 120]
    assert len(data["fact_list"]) == 5 and data["plant_rounds"] == [1]
    assert "what it sees" in report  # says plainly what the quiz means on the fake model


def test_bad_plant_rounds_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--model", "fake", "--rounds", "3", "--plant-rounds", "1,9"]) == 2
    assert "round 9 is after the last one (3)" in capsys.readouterr().err
    assert main(["probe", "--model", "fake", "--plant-rounds", "x"]) == 2


def test_landed_counts_only_facts_a_debater_states_in_its_planting_round() -> None:
    facts = make_facts(4, [1, 2])  # rounds 1, 2, 1, 2
    turns = [
        {"kind": "briefing", "round": 1, "content": facts[0].sentence},  # a briefing is not a reply
        {"kind": "proposal", "round": 1, "content": f"We shard by {facts[2].value}."},
        {"kind": "critique", "round": 1, "content": f"Mind {facts[1].value}."},  # planted for round 2, said in 1
        {"kind": "refinement", "round": 2, "content": "Keep " + facts[3].value.replace("_", "\\_") + "."},
        {"kind": "synthesis", "round": 2, "content": facts[1].sentence},  # the judge does not plant
    ]
    assert landed(turns, facts) == [facts[2], facts[3]]


def test_plant_replies_asks_only_the_debaters_of_the_planting_round(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.openai_server import OpenAIServer

    facts = make_facts(4, [3])  # the last round, where the judge synthesizes too
    with OpenAIServer(words=30) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe-0000")
        result = run_probe(Context(model="openai:test-model", rounds=3, agents="architect,security"), facts,
                           "phase", plant="replies")
        received = server.prompts()
    note = reply_notes(facts)["3"]
    # round 3 of two agents: two critiques and two refinements (proposals carry over); not the judge's call
    assert sum(note in p for p in received) == 4
    # the server's replies are drawn from a fixed vocabulary: no fact lands, so nothing is measured or quizzed
    assert result["landed"] == 0 and result["rows"] == [] and result["quiz"] == {}
    assert not any("Answer each question" in p for p in received)
    assert "0 of 4 facts landed" in render(result) and "No quiz" in render(result)


def test_plant_replies_on_the_fake_model_measures_the_landed_facts_from_the_next_round() -> None:
    facts = make_facts(6, [1])
    result = run_probe(Context(model="fake:words=40", rounds=3, agents="architect,security"), facts, "phase",
                       plant="replies")
    assert 0 < result["landed"] <= 6
    assert sum(f["landed"] for f in result["fact_list"]) == result["landed"]
    assert [r["round"] for r in result["rows"]] == [2, 3]  # a reply is the fact's first appearance
    assert all(r["transcript_min"] == 1.0 for r in result["rows"])
