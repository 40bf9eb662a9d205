"""The debate graph on the fake model: phases, counts, views, settings fixed in state, interrupts, concurrency."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.types import Command

from debate_engine import Context, compile_debate
from debate_engine.memory import perspective
from debate_engine.nodes.routes import after_setup, after_summarize, route
from debate_engine.providers.fake import FakeChatModel

ROLES = ("architect", "performance", "security", "testing", "kiss")


def kinds(values: dict[str, Any], round_no: int | None = None) -> Counter[str]:
    return Counter(t["kind"] for t in values["transcript"] if round_no is None or t["round"] == round_no)


def shape(values: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(t["id"], t["kind"], t["round"]) for t in values["transcript"]]


class Prompts(BaseCallbackHandler):
    """Every chat-model call's metadata, user prompt and start/end times (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[Any, dict[str, Any]] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any) -> None:
        meta = kwargs.get("metadata") or {}
        with self.lock:
            self.calls[run_id] = {
                "agent_id": meta.get("agent_id"),
                "phase": meta.get("phase"),
                "kind": meta.get("kind"),
                "round": meta.get("round"),
                "tags": kwargs.get("tags") or [],
                "system": str(messages[0][0].content),
                "user": str(messages[0][-1].content),
                "start": time.monotonic(),
                "end": None,
            }

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        with self.lock:
            if run_id in self.calls:
                self.calls[run_id]["end"] = time.monotonic()


# --- counts per round -----------------------------------------------------------------------------------------


def test_three_agents_two_rounds_have_every_phase_in_its_round(debate) -> None:
    out = debate(rounds=2, agents="architect,performance,security")
    # 3 agents: 3 proposals, 3 x 2 = 6 critiques, 3 refinements in round 1; round 2 critiques the refinements.
    assert kinds(out, 1) == Counter({"proposal": 3, "critique": 6, "refinement": 3})
    assert kinds(out, 2) == Counter({"critique": 6, "refinement": 3, "synthesis": 1})
    assert kinds(out) == Counter({"proposal": 3, "critique": 12, "refinement": 6, "synthesis": 1})
    for r in (1, 2):
        pairs = {(t["speaker"], t["target"]) for t in out["transcript"] if t["kind"] == "critique" and t["round"] == r}
        agents = ("architect", "performance", "security")
        assert pairs == {(a, b) for a in agents for b in agents if a != b}
    assert out["solution"]["structured"] and 0 <= out["solution"]["confidence"] <= 100
    status = out["status"]
    assert (status["phase"], status["round"], status["rounds"], status["turns"]) == ("done", 2, 2, 22)


def test_a_single_agent_skips_critique_and_refines_every_round(debate) -> None:
    out = debate(rounds=2, agents="kiss")
    assert kinds(out) == Counter({"proposal": 1, "refinement": 2, "synthesis": 1})
    assert [t["id"] for t in out["transcript"]] == [
        "proposal:r1:kiss", "refinement:r1:kiss", "refinement:r2:kiss", "synthesis:r2:judge",
    ]


def test_an_empty_problem_is_refused(debate) -> None:
    with pytest.raises(ValueError, match="problem is empty"):
        debate(problem="   ")


# --- invariants of every debate --------------------------------------------------------------------------------


def history_headings(user: str) -> list[str]:
    """The headings of the verbatim history section of a prompt."""
    if "## Recent history, verbatim" not in user:
        return []
    section = user.split("## Recent history, verbatim", 1)[1].split("## Your task", 1)[0]
    return re.findall(r"^### (.+)$", section, re.M)


def allowed_heading(heading: str, viewer: str) -> bool:
    """What ``viewer`` may see verbatim: its own positions, critiques of itself, the shared clarifications."""
    if heading.startswith("Clarifications asked by "):
        return True
    if m := re.fullmatch(r"(Proposal|Refinement) by (\S+) \(round \d+\)", heading):
        return m.group(2) == viewer
    if m := re.fullmatch(r"Critique by (\S+) of (\S+) \(round \d+\)", heading):
        return m.group(2) == viewer and m.group(1) != viewer
    return False


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_agents=st.integers(1, 3),
    rounds=st.integers(1, 3),
    words=st.sampled_from([20, 250]),
    window=st.sampled_from([2048, 8192]),
)
@example(n_agents=3, rounds=3, words=250, window=2048)  # summaries before nearly every phase
def test_every_turn_is_numbered_budgeted_and_sees_only_its_perspective(
    n_agents: int, rounds: int, words: int, window: int
) -> None:
    agents = ROLES[:n_agents]
    spy = Prompts()
    out = compile_debate().invoke(
        {"problem": "Design a rate limiter for rate_limiter.py"},
        {"configurable": {"thread_id": "inv"}, "callbacks": [spy]},
        context=Context(model=f"fake:words={words}", agents=",".join(agents), rounds=rounds,
                        context_window=window, max_output_tokens=512),
    )
    transcript = out["transcript"]
    assert [t["seq"] for t in transcript] == list(range(len(transcript)))
    assert len({t["id"] for t in transcript}) == len(transcript)
    many = n_agents > 1
    per_round = n_agents + (n_agents * (n_agents - 1) if many else 0)  # refinements (+ critiques)
    assert len(transcript) == n_agents + rounds * per_round + 1

    summaries = {s["id"]: s for s in out["summary_log"]}
    for turn in transcript:
        view = turn["view"]
        assert view is not None, turn["id"]
        assert view["budget_tokens"] == window - 512
        assert view["prompt_tokens"] <= view["budget_tokens"]
        assert view["to_seq"] <= turn["seq"]
        speaker = turn["speaker"]
        summary = summaries.get(view["summary_id"]) if view["summary_id"] else None
        if view["summary_id"]:
            assert summary is not None and summary["agent_id"] == speaker and summary["status"] == "ok"
            assert summary["through"] <= view["to_seq"]
        # no forgetting: the verbatim part starts where the summary's coverage ends (or earlier)
        assert view["from_seq"] <= (summary["through"] if summary else 0), turn["id"]
        shown = [t for t in perspective(transcript[: view["to_seq"]], speaker) if t["seq"] >= view["from_seq"]]
        if turn["kind"] == "refinement":  # its own current position is the task, not history
            own = [t for t in transcript[: view["to_seq"]]
                   if t["speaker"] == speaker and t["kind"] in ("proposal", "refinement")]
            shown = [t for t in shown if t["seq"] != own[-1]["seq"]]
        assert view["turns"] == len(shown), turn["id"]

    views = {(t["speaker"], t["kind"], t["round"]): t["view"] for t in transcript}
    agent_calls = [c for c in spy.calls.values() if c["agent_id"] in agents and "summarizer" not in c["tags"]]
    assert len(agent_calls) == len(transcript) - 1
    for call in agent_calls:
        headings = history_headings(call["user"])
        assert all(allowed_heading(h, call["agent_id"]) for h in headings), (call["agent_id"], headings)
        assert len(headings) == views[(call["agent_id"], call["kind"], call["round"])]["turns"]


def test_the_views_of_a_long_debate_use_summaries_of_their_own_perspective(debate) -> None:
    out = debate(rounds=4, agents="architect,security", model="fake:words=200", summary_threshold=1500)
    log = out["summary_log"]
    assert log and all(r["status"] == "ok" for r in log)
    by_id = {r["id"]: r for r in log}
    used = [t for t in out["transcript"] if t["view"]["summary_id"]]
    assert {t["speaker"] for t in used} >= {"architect", "security", "judge"}
    assert all(by_id[t["view"]["summary_id"]]["agent_id"] == t["speaker"] for t in used)
    judge = [r for r in log if r["agent_id"] == "judge"]
    synthesis = out["transcript"][-1]
    assert synthesis["kind"] == "synthesis" and synthesis["view"]["summary_id"] == judge[-1]["id"]


def test_summarizing_off_never_summarizes(debate) -> None:
    out = debate(rounds=3, agents="architect,security", model="fake:words=300", summarize=False)
    assert out["summary_log"] == []
    assert all(t["view"]["summary_id"] is None for t in out["transcript"])


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
    first = graph.invoke({"problem": "First problem"}, config, context=Context(model="fake", agents="kiss", rounds=2))
    assert len(first["transcript"]) == 4
    second = graph.invoke({"problem": "Second problem"}, config,
                          context=Context(model="fake", agents="architect,security", rounds=1))
    assert second["problem"] == "Second problem"
    assert second["transcript"][0]["seq"] == 0
    assert kinds(second) == Counter({"proposal": 2, "critique": 2, "refinement": 2, "synthesis": 1})
    assert all(t["speaker"] != "kiss" for t in second["transcript"])
    assert second["status"]["turns"] == 7 and second["status"]["problem"] == "Second problem"
    earlier = [s.values for s in graph.get_state_history(config)
               if s.values.get("problem") == "First problem" and s.values.get("solution")]
    assert earlier and len(earlier[0]["transcript"]) == 4


def test_resume_reads_the_settings_fixed_in_state_not_a_context() -> None:
    graph = compile_debate(interrupt_before=["refine"])
    config = {"configurable": {"thread_id": "fixed"}}
    graph.invoke({"problem": "p"}, config, context=Context(
        model="fake", agents="architect,security", rounds=2, context_window=2048, max_output_tokens=512))
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
    assert arch.count("A: ") == len(asked["architect"]) and sec.count("A: (no answer)") == len(asked["security"])
    # clarifications are everyone's: each proposal saw both verbatim
    proposals = [t for t in out["transcript"] if t["kind"] == "proposal"]
    assert [t["view"]["turns"] for t in proposals] == [2, 2]
    assert out["solution"] is not None


# --- routing and the drawing -------------------------------------------------------------------------------------


def profile(agent_id: str, summarization: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": agent_id, "role": "architect", "context_window": 8192, "max_output_tokens": 1024,
            "summarization": summarization or {"enabled": False}}


def state(phase: str, round_no: int, *, agents: int = 2, rounds: int = 2, clarify: bool = False,
          max_questions: int = 3, transcript: list[Any] | None = None, summarized_for: str = "",
          summarization: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "phase": phase, "round": round_no, "summarized_for": summarized_for,
        "transcript": transcript or [], "summary_log": [],
        "settings": {"agents": [profile(f"a{i}", summarization) for i in range(agents)],
                     "judge": profile("judge", summarization), "rounds": rounds, "clarify": clarify,
                     "max_questions": max_questions, "max_concurrency": 0},
    }


def test_routers_are_pure_functions_of_plain_state() -> None:
    assert after_setup(state("setup", 0, clarify=True)) == "clarify"  # type: ignore[arg-type]
    assert after_setup(state("setup", 0, clarify=True, max_questions=0)) == "propose"  # type: ignore[arg-type]
    assert after_setup(state("setup", 0)) == "propose"  # type: ignore[arg-type]
    assert route(state("clarify", 0)) == "propose"  # type: ignore[arg-type]
    assert route(state("propose", 1)) == "critique"  # type: ignore[arg-type]
    assert route(state("propose", 1, agents=1)) == "refine"  # type: ignore[arg-type]
    assert route(state("critique", 1)) == "refine"  # type: ignore[arg-type]
    assert route(state("refine", 1)) == "critique"  # type: ignore[arg-type]
    assert route(state("refine", 1, agents=1)) == "refine"  # type: ignore[arg-type]
    assert route(state("refine", 2)) == "synthesize"  # type: ignore[arg-type]
    assert after_summarize(state("propose", 1, summarized_for="1:critique")) == "critique"  # type: ignore[arg-type]
    assert after_summarize(state("refine", 2, summarized_for="2:synthesize")) == "synthesize"  # type: ignore[arg-type]


def test_a_due_summary_is_routed_to_once_per_phase() -> None:
    from tests.conftest import make_turn

    long = [make_turn(i, speaker="a0", kind="proposal", round_no=1, content="x" * 3000) for i in range(3)]
    due = {"threshold": 1000, "minMessages": 1}
    assert route(state("propose", 1, transcript=long, summarization=due)) == "summarize"  # type: ignore[arg-type]
    done = state("propose", 1, transcript=long, summarization=due, summarized_for="1:critique")
    assert route(done) == "critique"  # type: ignore[arg-type]


def test_the_drawing_has_one_node_per_phase() -> None:
    mermaid = compile_debate().get_graph().draw_mermaid()
    for node in ("setup", "clarify", "summarize", "propose", "critique", "refine", "synthesize"):
        assert re.search(rf"^\s*{node}\(", mermaid, re.M), node
    assert not re.search(r"worker|planner|plan_", mermaid, re.I)


# --- concurrency and summaries -----------------------------------------------------------------------------------


def test_the_calls_of_a_phase_are_in_flight_together() -> None:
    spy = Prompts()
    compile_debate(interrupt_after=["critique"]).invoke(
        {"problem": "p"},
        {"configurable": {"thread_id": "c"}, "callbacks": [spy]},
        context=Context(model="fake:latency_ms=300", rounds=1, agents="architect,performance,security,testing"),
    )
    spans = [(c["start"], c["end"]) for c in spy.calls.values() if c["phase"] == "critique"]
    assert len(spans) == 12 and all(end is not None for _, end in spans)
    most = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    assert most >= 2, f"critique calls ran one at a time: {sorted(spans)}"


def from_config(tmp_path: Path, data: str, **context: Any) -> tuple[Any, dict[str, Any], Context]:
    config = tmp_path / "c.json"
    config.write_text(data)
    return compile_debate(), {"configurable": {"thread_id": "t"}}, Context(config_file=str(config), **context)


def test_a_failing_summarizer_loses_nothing(tmp_path: Path) -> None:
    graph, thread, context = from_config(
        tmp_path,
        '{"agents": [{"id": "a", "role": "architect", "model": "fake"},'
        ' {"id": "b", "role": "security", "model": "fake:fail=summaries"}],'
        '"judge": {"model": "fake"}, "debate": {"rounds": 3, "summarization": {"threshold": 800}}}',
    )
    out = graph.invoke({"problem": "p"}, thread, context=context)
    failed = [r for r in out["summary_log"] if r["status"] == "failed"]
    assert failed and {r["agent_id"] for r in failed} == {"b"}
    assert kinds(out)["refinement"] == 6 and out["solution"] is not None


def test_abort_on_failure_stops_the_run_and_keeps_the_turns(tmp_path: Path) -> None:
    from debate_engine.nodes import SummarizationAborted

    graph, thread, context = from_config(
        tmp_path,
        '{"agents": [{"id": "a", "role": "architect", "model": "fake:fail=summaries"}],'
        '"judge": {"model": "fake"}, "debate": {"rounds": 3, "summarization": {"threshold": 300, '
        '"abortOnFailure": true}}}',
    )
    with pytest.raises(SummarizationAborted):
        graph.invoke({"problem": "p"}, thread, context=context)
    kept = graph.get_state(thread).values["transcript"]
    assert kept and kept[0]["id"] == "proposal:r1:a"


def test_a_custom_summary_prompt_is_really_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = tmp_path / "summary.md"
    prompt.write_text("CUSTOM-SUMMARY-PROMPT: keep every number.")
    graph, thread, context = from_config(
        tmp_path,
        f'{{"agents": [{{"id": "a", "role": "architect", "summaryPromptPath": "{prompt}"}}, '
        '{"id": "b", "role": "kiss"}], "debate": {"rounds": 3, "summarization": {"threshold": 800}}}',
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
