"""The debate graph on the fake model: phases, counts, ways to run, threads, settings, interrupts, concurrency."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from langgraph.types import Command

from debate_engine import Context, compile_debate
from tests.support.graph_runs import Prompts, kinds


def shape(values: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(t["id"], t["kind"], t["round"]) for t in values["transcript"]]


# --- counts per round -----------------------------------------------------------------------------------------


def test_three_agents_two_rounds_have_every_phase_in_its_round(debate) -> None:
    out = debate(rounds=2, agents="architect,performance,security")
    # 3 agents: 3 proposals, 3 x 2 = 6 critiques, 3 refinements in round 1; round 2 critiques the refinements.
    assert kinds(out, 1) == Counter({"proposal": 3, "critique": 6, "refinement": 3})
    assert kinds(out, 2) == Counter({"critique": 6, "refinement": 3, "synthesis": 1})
    assert kinds(out) == Counter({"proposal": 3, "critique": 12, "refinement": 6, "synthesis": 1})
    for r in (1, 2):
        pairs = {
            (t["speaker"], t["target"])
            for t in out["transcript"]
            if t["kind"] == "critique" and t["round"] == r
        }
        agents = ("architect", "performance", "security")
        assert pairs == {(a, b) for a in agents for b in agents if a != b}
    assert out["solution"]["structured"] and 0 <= out["solution"]["confidence"] <= 100
    status = out["status"]
    assert (status["phase"], status["round"], status["rounds"], status["turns"]) == (
        "done",
        2,
        2,
        22,
    )


def test_a_single_agent_skips_critique_and_refines_every_round(debate) -> None:
    out = debate(rounds=2, agents="kiss")
    assert kinds(out) == Counter({"proposal": 1, "refinement": 2, "synthesis": 1})
    assert [t["id"] for t in out["transcript"]] == [
        "proposal:r1:kiss",
        "refinement:r1:kiss",
        "refinement:r2:kiss",
        "synthesis:r2:judge",
    ]


def test_an_empty_problem_is_refused(debate) -> None:
    with pytest.raises(ValueError, match="problem is empty"):
        debate(problem="   ")


# --- the four ways to run ---------------------------------------------------------------------------------------


def test_invoke_ainvoke_stream_and_astream_give_the_same_debate() -> None:
    context = Context(model="fake:words=40", agents="architect,kiss", rounds=2)
    problem = {"problem": "Design a cache"}

    def config(name: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": name}}

    graph = compile_debate()
    invoked = shape(graph.invoke(problem, config("i"), context=context))
    list(graph.stream(problem, config("s"), context=context, stream_mode="updates"))
    streamed = shape(graph.get_state(config("s")).values)

    async def run_async() -> tuple[list[Any], list[Any]]:
        a = shape(await graph.ainvoke(problem, config("a"), context=context))
        async for _ in graph.astream(problem, config("as"), context=context, stream_mode="updates"):
            pass
        return a, shape((await graph.aget_state(config("as"))).values)

    ainvoked, astreamed = asyncio.run(run_async())
    assert len(invoked) == 2 + 2 * (2 + 2) + 1
    assert invoked == streamed == ainvoked == astreamed


# --- threads, settings and interrupts ----------------------------------------------------------------------------


def test_a_new_input_on_a_used_thread_starts_a_clean_debate() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "again"}}
    first = graph.invoke(
        {"problem": "First problem"}, config, context=Context(model="fake", agents="kiss", rounds=2)
    )
    assert len(first["transcript"]) == 4
    second = graph.invoke(
        {"problem": "Second problem"},
        config,
        context=Context(model="fake", agents="architect,security", rounds=1),
    )
    assert second["problem"] == "Second problem"
    assert second["transcript"][0]["seq"] == 0
    assert kinds(second) == Counter({"proposal": 2, "critique": 2, "refinement": 2, "synthesis": 1})
    assert all(t["speaker"] != "kiss" for t in second["transcript"])
    assert second["status"]["turns"] == 7 and second["status"]["problem"] == "Second problem"
    earlier = [
        s.values
        for s in graph.get_state_history(config)
        if s.values.get("problem") == "First problem" and s.values.get("solution")
    ]
    assert earlier and len(earlier[0]["transcript"]) == 4


def test_resume_reads_the_settings_fixed_in_state_not_a_context() -> None:
    graph = compile_debate(interrupt_before=["refine"])
    config = {"configurable": {"thread_id": "fixed"}}
    graph.invoke(
        {"problem": "p"},
        config,
        context=Context(
            model="fake",
            agents="architect,security",
            rounds=2,
            context_window=2048,
            max_output_tokens=512,
        ),
    )
    pauses = 0
    while graph.get_state(config).next:
        assert graph.get_state(config).next == ("refine",)
        pauses += 1
        graph.invoke(None, config)  # no context: the settings come from state
    values = graph.get_state(config).values
    assert pauses == 2 and values["solution"] is not None
    assert kinds(values) == Counter({"proposal": 2, "critique": 4, "refinement": 4, "synthesis": 1})
    assert {t["view"]["budget_tokens"] for t in values["transcript"]} == {2048 - 512}
    assert [a["id"] for a in values["settings"]["agents"]] == ["architect", "security"]


def test_clarifications_interrupt_and_record_the_answers() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "q"}}
    context = Context(model="fake:words=12", rounds=1, agents="architect,security", clarify=True)
    graph.invoke({"problem": "Design a cache"}, config, context=context)
    snapshot = graph.get_state(config)
    assert snapshot.next == ("clarify",)
    asked = {q["agent_id"]: q["questions"] for q in snapshot.interrupts[0].value["questions"]}
    assert set(asked) == {"architect", "security"}
    assert all(1 <= len(qs) <= 3 for qs in asked.values())
    out = graph.invoke(Command(resume={"architect": ["Use Redis 7."], "security": [""]}), config)
    clar = {t["speaker"]: t for t in out["transcript"] if t["kind"] == "clarification"}
    assert set(clar) == {"architect", "security"} and {t["seq"] for t in clar.values()} == {0, 1}
    arch, sec = clar["architect"]["content"], clar["security"]["content"]
    assert f"Q: {asked['architect'][0]}\nA: Use Redis 7." in arch
    assert f"Q: {asked['security'][0]}\nA: (no answer)" in sec
    assert arch.count("A: ") == len(asked["architect"]) and sec.count("A: (no answer)") == len(
        asked["security"]
    )
    # clarifications are everyone's: each proposal saw both verbatim
    proposals = [t for t in out["transcript"] if t["kind"] == "proposal"]
    assert [t["view"]["turns"] for t in proposals] == [2, 2]
    assert out["solution"] is not None


# --- concurrency ---------------------------------------------------------------------------------------------------


def test_the_calls_of_a_phase_are_in_flight_together() -> None:
    spy = Prompts()
    compile_debate(interrupt_after=["critique"]).invoke(
        {"problem": "p"},
        {"configurable": {"thread_id": "c"}, "callbacks": [spy]},
        context=Context(
            model="fake:latency_ms=300", rounds=1, agents="architect,performance,security,testing"
        ),
    )
    spans = [(c["start"], c["end"]) for c in spy.calls.values() if c["phase"] == "critique"]
    assert len(spans) == 12 and all(end is not None for _, end in spans)
    most = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    assert most >= 2, f"critique calls ran one at a time: {sorted(spans)}"
