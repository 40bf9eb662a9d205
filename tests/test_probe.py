"""The memory probe on the fake model: facts planted as briefings, measured per tier, and the quiz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate_engine import Context
from debate_engine.app.cli.main import main
from debate_engine.app.measure.probe.driver import run_probe
from debate_engine.app.measure.probe.facts import (
    briefings,
    contains,
    landed,
    make_facts,
    reply_notes,
)
from debate_engine.app.measure.probe.readings import render


def test_facts_are_distinct_unguessable_and_spread_over_the_planting_rounds() -> None:
    facts = make_facts(20, [1, 8])
    assert len({f.value for f in facts}) == 20 and len({f.key for f in facts}) == 20
    assert [f.round for f in facts].count(1) == 10 and [f.round for f in facts].count(8) == 10
    notes = briefings(facts)
    assert set(notes) == {"1", "8"} and all(f.sentence in notes[str(f.round)] for f in facts)
    assert make_facts(20, [1, 8]) == facts and make_facts(20, [1, 8], seed=8) != facts


def test_a_phase_debate_probe_measures_every_tier() -> None:
    facts = make_facts(6, [1])
    result = run_probe(
        Context(model="fake:words=60", rounds=3, agents="architect,security"), facts, "phase"
    )
    assert [r["round"] for r in result["rows"]] == [1, 2, 3]
    assert all(
        r["transcript_min"] == 1.0 for r in result["rows"]
    )  # a briefing is in every perspective
    # every prompt of the round: round 1 is two proposals, two critiques and two refinements
    assert [r["prompts"] for r in result["rows"]] == [6, 4, 4]
    # nothing is summarized in round 1 with an 8K window: the briefing is verbatim in every view
    assert result["rows"][0]["view_min"] == 1.0 and result["rows"][0]["summary_min"] == 0
    assert set(result["quiz"]) == {"architect", "security"} and result["summaries"] >= 0


def test_view_as_sent_is_a_search_of_the_prompt_a_real_server_received(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.openai_server import OpenAIServer

    facts = make_facts(4, [1])
    with OpenAIServer(words=30) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe-0000")
        result = run_probe(
            Context(model="openai:test-model", rounds=2, agents="architect,security"),
            facts,
            "phase",
        )
        received = server.prompts()
    debate_prompts = [p for p in received if "Answer each question" not in p]
    found_by_server = sum(contains(p, f) for p in debate_prompts for f in facts)
    assert found_by_server > 0
    # round 1: every agent's proposal/critique/refinement prompts carry the briefing verbatim
    assert result["rows"][0]["view_min"] == 1.0
    quiz_prompts = [p for p in received if "Answer each question" in p]
    assert len(quiz_prompts) == 2  # one quiz call per agent


def test_a_roundtable_probe_has_a_row_per_run_of_turns_and_after_each_planting_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "probe.json"
    code = main(
        [
            "probe",
            "--model",
            "fake:words=20",
            "--protocol",
            "roundtable",
            "--turns",
            "120",
            "--facts",
            "5",
            "--plant-rounds",
            "1,30",
            "--every",
            "25",
            "--quiet",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    report = capsys.readouterr().out
    assert (
        report.startswith("# Memory probe: 5 facts planted")
        and "| agent | quiz accuracy |" in report
    )
    data = json.loads(out.read_text())
    spans = [(r["round"], r["until"], r["why"]) for r in data["rows"]]
    assert [s for s in spans if not s[2]] == [
        (1, 25, ""),
        (26, 50, ""),
        (51, 75, ""),
        (76, 100, ""),
        (101, 120, ""),
    ]
    assert (1, 1, "after planting") in spans and (30, 30, "after planting") in spans
    assert any(why == "after a summary" for _, _, why in spans) and data["summaries"] > 0
    assert sum(r["prompts"] for r in data["rows"] if not r["why"]) == 120, (
        "every turn's prompt is measured"
    )
    assert len(data["fact_list"]) == 5 and data["plant_rounds"] == [1, 30]


def test_bad_plant_rounds_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--model", "fake", "--rounds", "3", "--plant-rounds", "1,9"]) == 2
    assert "round 9 is after the last one (3)" in capsys.readouterr().err
    assert main(["probe", "--model", "fake", "--plant-rounds", "x"]) == 2


def test_landed_counts_only_facts_a_debater_states_in_its_planting_round() -> None:
    facts = make_facts(4, [1, 2])  # rounds 1, 2, 1, 2
    turns = [
        {"kind": "briefing", "round": 1, "content": facts[0].sentence},  # a briefing is not a reply
        {"kind": "proposal", "round": 1, "content": f"We shard by {facts[2].value}."},
        {
            "kind": "critique",
            "round": 1,
            "content": f"Mind {facts[1].value}.",
        },  # planted for round 2, said in 1
        {
            "kind": "refinement",
            "round": 2,
            "content": "Keep " + facts[3].value.replace("_", "\\_") + ".",
        },
        {"kind": "synthesis", "round": 2, "content": facts[1].sentence},  # the judge does not plant
    ]
    assert landed(turns, facts) == [facts[2], facts[3]]


def test_plant_replies_asks_only_the_debaters_of_the_planting_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.openai_server import OpenAIServer

    facts = make_facts(4, [3])  # the last round, where the judge synthesizes too
    with OpenAIServer(words=30) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe-0000")
        result = run_probe(
            Context(model="openai:test-model", rounds=3, agents="architect,security"),
            facts,
            "phase",
            plant="replies",
        )
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
    result = run_probe(
        Context(model="fake:words=40", rounds=3, agents="architect,security"),
        facts,
        "phase",
        plant="replies",
    )
    assert 0 < result["landed"] <= 6
    assert sum(f["landed"] for f in result["fact_list"]) == result["landed"]
    assert [r["round"] for r in result["rows"]] == [2, 3]  # a reply is the fact's first appearance
    # a reply is in its speaker's perspective and the critiqued agent's, not in every one
    assert all(r["transcript_mean"] > 0 for r in result["rows"])


def test_the_probe_takes_the_run_options_and_stores_its_debate_where_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, env, db = tmp_path / "config.json", tmp_path / "keys.env", str(tmp_path / "d.sqlite")
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": "kiss", "role": "kiss", "model": "fake:words=20"},
                    {"id": "sec", "role": "security", "model": "fake:words=20"},
                ],
                "judge": {"id": "judge", "model": "fake"},
                "debate": {"rounds": 4},
            }
        )
    )
    env.write_text("DEBATE_PROBE_TEST=1\n")
    out = tmp_path / "probe.json"
    assert (
        main(
            [
                "probe",
                "--config",
                str(config),
                "--db",
                db,
                "--thread-id",
                "mine",
                "--env-file",
                str(env),
                "--summary-method",
                "fresh",
                "--facts",
                "3",
                "--quiet",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert [r["round"] for r in data["rows"]] == [1, 2, 3, 4], (
        "the config's rounds, not the probe's default"
    )
    capsys.readouterr()
    assert (
        main(["report", "--thread", "mine", "--db", db]) == 0 and "kiss" in capsys.readouterr().out
    )
    assert (
        main(["probe", "--config", str(config), "--db", db, "--thread-id", "mine", "--facts", "3"])
        == 2
    )
    assert "already holds a debate" in capsys.readouterr().err

    assert (
        main(
            [
                "probe",
                "--model",
                "fake:words=20",
                "--protocol",
                "roundtable",
                "--turns",
                "12",
                "--order",
                "moderator",
                "--summary-every",
                "4",
                "--agents",
                "kiss,testing",
                "--facts",
                "3",
                "--quiet",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    turns = sum(r["prompts"] for r in data["rows"] if not r["why"])
    assert data["protocol"] == "roundtable" and data["calls"] >= 2 * turns + 1, (
        "a moderator's choice per turn"
    )
    assert (
        main(
            ["probe", "--model", "fake", "--no-summary", "--rounds", "2", "--facts", "3", "--quiet"]
        )
        == 0
    )
    assert "Summaries: 0;" in capsys.readouterr().out
    assert (
        main(["probe", "--model", "fake", "--order", "moderator"]) == 2
    )  # the roundtable's option
    assert main(["probe", "--model", "fake", "--clarify"]) == 2
    assert "cannot answer clarifying questions" in capsys.readouterr().err


def test_the_report_says_what_the_fake_model_s_quiz_can_reach() -> None:
    facts = make_facts(20, [1])
    result = run_probe(
        Context(model="fake:words=40", rounds=1, agents="architect,security"), facts, "phase"
    )
    assert result["quiz_ceiling"] == 0.25 and all(
        score <= 0.25 for score in result["quiz"].values()
    )
    assert "at most 5 identifiers per answer: with 20 facts it cannot score above 25%." in render(
        result
    )


def test_the_transcript_column_is_the_speaker_s_own_perspective_not_the_whole_transcript() -> None:
    from debate_engine.app.measure.probe.readings import turn_measures
    from tests.conftest import make_turn

    fact = make_facts(1, [1])[0]
    turns = [
        make_turn(0, speaker="a", kind="proposal", content=f"Shard by {fact.value}.", round_no=1),
        make_turn(1, speaker="b", kind="proposal", content="Use a queue.", round_no=1),
        make_turn(2, speaker="b", kind="critique", target="a", content="Too complex.", round_no=2),
        make_turn(3, speaker="a", kind="critique", target="b", content="Too simple.", round_no=2),
    ]
    values = {
        "settings": {"agents": [{"id": "a"}, {"id": "b"}]},
        "summary_log": [],
        "transcript": turns,
    }
    measured = {
        (m["agent"], m["round"]): m["perspective"] for m in turn_measures(values, [fact], lag=1)
    }
    # the whole transcript holds the fact before round 2; only a's perspective (its own proposal) does
    assert measured == {("b", 2): 0.0, ("a", 2): 1.0}


def test_facts_take_every_shape_and_a_per_agent_fact_is_noted_for_its_agent_alone() -> None:
    facts = make_facts(10, [2], speakers=("architect", "security"))
    assert [f.shape for f in facts[:5]] == ["identifier", "words", "number", "name", "money"]
    notes = reply_notes(facts)
    assert set(notes) == {"2:architect", "2:security"}
    assert all(f.sentence in notes[f"2:{f.speaker}"] for f in facts)
    assert contains("the replica count is 4817.", facts[2].__class__("k", "4817", 1))
    assert not contains("14817", facts[2].__class__("k", "4817", 1))


def test_a_reply_note_for_one_agent_reaches_its_prompts_only_and_a_bad_key_is_refused() -> None:
    from debate_engine import compile_debate
    from debate_engine.config.resolve import ConfigError, resolve
    from tests.support.graph_runs import Prompts

    with pytest.raises(ConfigError) as info:
        resolve(Context(model="fake", agents="architect,security", reply_notes={"1:nobody": "x"}))
    assert "1:nobody" in str(info.value)
    with pytest.raises(ConfigError):
        resolve(Context(model="fake", agents="architect,security", reply_notes={"first": "x"}))
    note = "Quote the shard key amber heron."
    context = Context(
        model="fake", agents="architect,security", rounds=1, reply_notes={"1:security": note}
    )
    log = Prompts()
    config = {"configurable": {"thread_id": "notes"}, "callbacks": [log]}
    compile_debate().invoke({"problem": "Pick a cache."}, config, context=context)
    calls = [c for c in log.calls.values() if c["phase"] in ("propose", "critique", "refine")]
    noted = {c["agent_id"] for c in calls if note in c["user"]}
    assert noted == {"security"} and {c["agent_id"] for c in calls} == {"architect", "security"}
