"""The debate graph on the fake model: phases, counts, views, summaries, concurrency."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from debate_engine.graph import Context, compile_debate
from debate_engine.providers.fake import FakeChatModel
from debate_engine.graph.routing import after_plan_critiques, after_plan_round, after_setup, after_summaries, send_tasks
from debate_engine.memory import agent_perspective


def kinds(values, round_no=None):
    return Counter(t["kind"] for t in values["transcript"] if round_no is None or t["round"] == round_no)


def test_three_agents_two_rounds_have_every_phase(debate) -> None:
    out = debate(rounds=2, agents="architect,performance,security")
    for r in (1, 2):
        assert kinds(out, r)["proposal"] == 3
        assert kinds(out, r)["critique"] == 6
        assert kinds(out, r)["refinement"] == 3
    assert kinds(out)["synthesis"] == 1
    assert out["solution"]["structured"] and 0 <= out["solution"]["confidence"] <= 100
    critiques = [(t["speaker"], t["target"]) for t in out["transcript"] if t["kind"] == "critique" and t["round"] == 1]
    assert len(set(critiques)) == 6 and all(a != b for a, b in critiques)


def test_every_model_turn_records_what_its_speaker_saw(debate) -> None:
    out = debate(rounds=2, agents="architect,security")
    ids = {t["id"] for t in out["transcript"]}
    for turn in out["transcript"]:
        if turn["model"] is None:
            assert turn.get("carried_from") in ids
            continue
        view = turn["view"]
        assert view["prompt_tokens"] <= view["budget_tokens"]
        assert set(view["turn_ids"]) <= ids
        if turn["kind"] in ("critique", "refinement") and turn["speaker"] != "judge":
            own = {t["id"] for t in agent_perspective(out["transcript"], turn["speaker"])}
            assert set(view["turn_ids"]) <= own, "an agent saw something outside its perspective"


def test_round_two_proposals_are_carried_over_without_a_call(debate) -> None:
    out = debate(rounds=2, agents="architect,kiss")
    refined = {t["speaker"]: t["content"] for t in out["transcript"] if t["kind"] == "refinement" and t["round"] == 1}
    carried = [t for t in out["transcript"] if t["kind"] == "proposal" and t["round"] == 2]
    assert {t["speaker"]: t["content"] for t in carried} == refined
    assert all(t["model"] is None and t["usage"] is None for t in carried)


def test_a_single_agent_skips_critique_and_refines(debate) -> None:
    out = debate(rounds=2, agents="kiss")
    assert kinds(out) == Counter({"proposal": 2, "refinement": 2, "synthesis": 1})


def test_refinement_sees_the_critiques_it_received(debate) -> None:
    out = debate(rounds=1, agents="architect,performance,security")
    refine = next(t for t in out["transcript"] if t["kind"] == "refinement" and t["speaker"] == "security")
    received = {t["id"] for t in out["transcript"] if t["kind"] == "critique" and t["target"] == "security"}
    assert received <= set(refine["view"]["turn_ids"])


def test_a_phase_runs_its_calls_concurrently() -> None:
    graph = compile_debate()
    started = time.perf_counter()
    graph.invoke(
        {"problem": "p"},
        {"configurable": {"thread_id": "c"}, "max_concurrency": 16},
        context=Context(model="fake:latency_ms=300", rounds=1, agents="architect,performance,security,testing"),
    )
    elapsed = time.perf_counter() - started
    # 4 proposals + 12 critiques + 4 refinements + 1 synthesis = 21 calls; sequential would take 6.3 s.
    assert elapsed < 3.0, f"phases did not run concurrently ({elapsed:.1f} s)"


def test_summaries_fire_and_are_used(debate) -> None:
    out = debate(rounds=4, agents="architect,security", model="fake:words=200", summary_threshold=1500)
    log = out["summary_log"]
    assert log, "long perspectives must be summarized"
    assert all(r["status"] == "ok" for r in log)
    first = log[0]
    assert out["summaries"][str(first["round"])][first["agent_id"]]["id"] == first["id"]
    used = [t for t in out["transcript"] if t["view"] and t["view"]["summary_id"] == first["id"]]
    assert used and all(t["speaker"] == first["agent_id"] for t in used)
    for record in log:
        if record["agent_id"] == "judge":
            continue
        targets = {
            t["target"]
            for t in out["transcript"]
            if t["id"] in set(record["covered_turn_ids"]) and t["kind"] == "critique"
        }
        assert targets <= {record["agent_id"]}, "a summary covered a critique aimed at someone else"


def test_the_judge_summary_reaches_the_synthesis(debate) -> None:
    out = debate(rounds=1, agents="architect,performance,security", model="fake:words=300", summary_threshold=2000)
    assert out["judge_summary"] is not None
    synthesis = next(t for t in out["transcript"] if t["kind"] == "synthesis")
    assert synthesis["view"]["summary_id"] == out["judge_summary"]["id"]


def test_summarizing_off_never_summarizes(debate) -> None:
    out = debate(rounds=3, agents="architect,security", model="fake:words=300", summarize=False)
    assert out["summary_log"] == [] and out["judge_summary"] is None


def from_config(tmp_path: Path, config_json: str, **context: str) -> tuple[Any, RunnableConfig, Context]:
    """A fresh graph, a thread and a context reading ``config_json`` from a file."""
    config = tmp_path / "c.json"
    config.write_text(config_json)
    return compile_debate(), {"configurable": {"thread_id": "t"}}, Context(config_file=str(config), **context)


def test_a_failing_summarizer_loses_nothing(tmp_path: Path) -> None:
    graph, thread, context = from_config(
        tmp_path,
        '{"agents": [{"id": "a", "role": "architect"}, {"id": "b", "role": "security", "model": "fake:fail=invalid"}],'
        '"debate": {"rounds": 3, "summarization": {"threshold": 800}}}',
    )
    out = graph.invoke({"problem": "p"}, thread, context=context)
    failed = [r for r in out["summary_log"] if r["status"] == "failed"]
    assert failed and {r["agent_id"] for r in failed} == {"b"}
    assert kinds(out)["refinement"] == 6 and out["solution"] is not None


def test_abort_on_failure_stops_the_run(tmp_path: Path) -> None:
    from debate_engine.nodes import SummarizationAborted

    graph, thread, context = from_config(
        tmp_path,
        '{"agents": [{"id": "a", "role": "architect", "model": "fake:fail=invalid"}],'
        '"debate": {"rounds": 3, "summarization": {"threshold": 300, "abortOnFailure": true}}}',
    )
    with pytest.raises(SummarizationAborted):
        graph.invoke({"problem": "p"}, thread, context=context)
    kept = graph.get_state(thread).values["transcript"]
    assert Counter(t["kind"] for t in kept)["refinement"] >= 1


def test_a_custom_summary_prompt_is_really_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = tmp_path / "summary.md"
    prompt.write_text("CUSTOM-SUMMARY-PROMPT: keep every number.")
    graph, thread, context = from_config(
        tmp_path,
        f'{{"agents": [{{"id": "a", "role": "architect", "summaryPromptPath": "{prompt}"}}, {{"id": "b", "role": "kiss"}}],'
        '"debate": {"rounds": 3, "summarization": {"threshold": 800}}}',
        model="fake",
    )
    seen: list[str] = []
    original = FakeChatModel._reply

    def spy(self: FakeChatModel, messages: Any) -> Any:
        seen.append(str(messages[0].content))
        return original(self, messages)

    monkeypatch.setattr(FakeChatModel, "_reply", spy)
    out = graph.invoke({"problem": "p"}, thread, context=context)
    assert any(r["agent_id"] == "a" for r in out["summary_log"])
    assert any(s.startswith("CUSTOM-SUMMARY-PROMPT") for s in seen)


def test_clarifications_interrupt_and_resume() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "q"}}
    context = Context(model="fake:words=12", rounds=1, agents="architect,security", clarify=True)
    graph.invoke({"problem": "Design a cache"}, config, context=context)
    snapshot = graph.get_state(config)
    asked = snapshot.interrupts[0].value["questions"]
    assert {q["agent_id"] for q in asked} == {"architect", "security"}
    out = graph.invoke(Command(resume={"architect": ["Use Redis 7."], "security": ""}), config, context=context)
    clar = {t["speaker"]: t["content"] for t in out["transcript"] if t["kind"] == "clarification"}
    assert "A: Use Redis 7." in clar["architect"]
    assert "A: (no answer)" in clar["security"]
    synthesis = next(t for t in out["transcript"] if t["kind"] == "synthesis")
    assert {f"clarification:r0:{a}" for a in ("architect", "security")} <= set(synthesis["view"]["turn_ids"])


def test_routers_are_pure_functions_of_state() -> None:
    state = {"tasks": [{"node": "critique", "agent_id": "a"}], "round": 1, "rounds": 2}
    assert [s.node for s in send_tasks(state)] == ["critique"]  # type: ignore[arg-type]
    assert after_setup({"tasks": []}) == "plan_round"  # type: ignore[arg-type]
    assert after_plan_round({"tasks": [], "round": 2, "rounds": 2}) == "synthesize"  # type: ignore[arg-type]
    assert after_summaries({"round": 1, "rounds": 2}) == "plan_proposals"  # type: ignore[arg-type]
    assert after_plan_critiques({"tasks": []}) == "plan_refinements"  # type: ignore[arg-type]


def test_an_empty_problem_is_refused(debate) -> None:
    with pytest.raises(ValueError, match="problem is empty"):
        debate(problem="   ")
