"""A person at the table, from Python: each of their turns is an interrupt with its task and view.

The agents are the ``fake`` model; the person answers with ``Command(resume={interrupt_id: answer})``.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.types import Command

from debate_engine import Context, RoundtableContext, compile_debate, compile_roundtable
from debate_engine.app.cli.progress import Progress
from tests.support.graph_runs import Prompts

PROBLEM = "Design a rate limiter"
ROLES = "architect,performance,security"
ALICE = "human:alice"


def answer_all(
    graph: Any, config: Any, answer: Callable[[dict[str, Any]], Any]
) -> list[dict[str, Any]]:
    """Answer every question until the debate ends; the questions, in the order they were asked."""
    asked: list[dict[str, Any]] = []
    while pending := graph.get_state(config).interrupts:
        asked += [i.value for i in pending]
        graph.invoke(Command(resume={i.id: answer(i.value) for i in pending}), config)
    return asked


def said(question: dict[str, Any]) -> str:
    """Return a distinct answer for each question, to find it in the transcript and in others' prompts."""
    return f"alice says {question['kind']} {question['target'] or 'own'} round {question['round']}"


def start(spy: Prompts, thread: str = "h", **context: Any) -> tuple[Any, Any]:
    graph = compile_debate()
    config = {"configurable": {"thread_id": thread}, "callbacks": [spy]}
    graph.invoke(
        {"problem": PROBLEM},
        config,
        context=Context(
            **{"model": "fake", "agents": ROLES, "humans": "alice", "rounds": 2, **context}
        ),
    )
    return graph, config


def test_every_turn_of_the_person_is_asked_with_its_task_and_view_and_becomes_their_turn() -> None:
    spy = Prompts()
    graph, config = start(spy)
    asked = answer_all(graph, config, said)
    critiques = [
        ("critique", r, t) for r in (1, 2) for t in ("architect", "performance", "security")
    ]
    assert [(q["kind"], q["round"], q["target"]) for q in asked] == [
        ("proposal", 1, None),
        *critiques[:3],
        ("refinement", 1, None),
        *critiques[3:],
        ("refinement", 2, None),
    ]
    transcript = graph.get_state(config).values["transcript"]
    for q in asked:
        assert (
            q["type"] == "human_turn"
            and q["seat"] == ALICE
            and q["name"] == "alice"
            and q["problem"] == PROBLEM
        )
        assert q["task"] and (q["target"] is None or q["target"] in q["task"])
        assert (
            q["view"]["system"] and PROBLEM in q["view"]["user"] and q["view"]["prompt_tokens"] > 0
        )
        assert "text" in q["answer_shape"] and "error" not in q
        if (
            q["kind"] == "critique"
        ):  # the proposal to critique is in the view, as the model would get it
            wanted = ("proposal", 1) if q["round"] == 1 else ("refinement", q["round"] - 1)
            target = next(
                t
                for t in transcript
                if t["speaker"] == q["target"] and (t["kind"], t["round"]) == wanted
            )
            assert target["content"][:60] in q["view"]["user"]
    mine = [t for t in transcript if t["speaker"] == ALICE]
    assert [t["content"] for t in mine] == [said(q) for q in asked]
    assert all(t["model"] is None and t["usage"] is None and t["role"] == "person" for t in mine)

    for round_no, refinement in (
        (1, asked[4]),
        (2, asked[8]),
    ):  # the critiques of alice's proposal reach her
        received = [t for t in transcript if t["target"] == ALICE and t["round"] == round_no]
        assert len(received) == 3
        assert all(t["content"][:60] in refinement["view"]["user"] for t in received)
    judge = [c["user"] for c in spy.calls.values() if c["phase"] == "synthesize"]
    assert len(judge) == 1 and f"by {ALICE}" in judge[0]
    assert said(asked[-1]) in judge[0] and said(asked[5]) in judge[0]
    values = graph.get_state(config).values
    assert ALICE not in values["spend"]["by_agent"] and values["solution"]


@pytest.mark.parametrize("use_async", [False, True])
def test_the_agents_calls_of_the_phase_run_while_the_person_thinks(use_async: bool) -> None:
    spy = Prompts()
    graph = compile_debate()
    config = {"configurable": {"thread_id": "c"}, "callbacks": [spy]}
    context = Context(model="fake:latency_ms=50", agents=ROLES, humans="alice", rounds=1)
    if use_async:
        asyncio.run(graph.ainvoke({"problem": PROBLEM}, config, context=context))
    else:
        graph.invoke({"problem": PROBLEM}, config, context=context)
    pending = graph.get_state(config).interrupts
    assert [i.value["kind"] for i in pending] == ["proposal"]
    proposals = [c for c in spy.calls.values() if c["phase"] == "propose"]
    assert len(proposals) == 3 and all(
        c["end"] is not None for c in proposals
    )  # done before any answer
    answer_all(graph, config, said)
    assert len([c for c in spy.calls.values() if c["phase"] == "propose"]) == 3  # never asked again
    assert (
        len([c for c in spy.calls.values() if c["phase"] == "critique"]) == 9
    )  # 3 critics x 3 targets, once


def test_several_people_are_asked_together_and_each_answer_is_their_own() -> None:
    spy = Prompts()
    graph, config = start(spy, agents="architect", humans="alice,bob", rounds=1)
    first = graph.get_state(config).interrupts
    assert sorted(i.value["seat"] for i in first) == [ALICE, "human:bob"]
    answer_all(graph, config, lambda q: f"{q['seat']} on {q['kind']} {q['target']}")
    transcript = graph.get_state(config).values["transcript"]
    for turn in transcript:
        if turn["speaker"].startswith("human:"):
            assert turn["content"] == f"{turn['speaker']} on {turn['kind']} {turn['target']}"
    assert (
        len([t for t in transcript if t["speaker"] == "human:bob" and t["kind"] == "critique"]) == 2
    )


def pending_after(graph: Any, config: Any, value: Any) -> list[dict[str, Any]]:
    """Resume the first pending question with ``value`` (any others with "fine"); the questions pending afterwards."""
    first, *others = graph.get_state(config).interrupts
    graph.invoke(Command(resume={first.id: value, **{i.id: "fine" for i in others}}), config)
    return [i.value for i in graph.get_state(config).interrupts]


def test_an_answer_of_the_wrong_shape_keeps_the_question_pending_with_a_clear_error() -> None:
    graph, config = start(Prompts(), rounds=1)
    before = graph.get_state(config).values["transcript"]
    for value, named in (
        (42, "of type int"),
        (["x"], "of type list"),
        ({"txt": "x"}, "has txt"),
        ({"text": 3}, "text is not a string"),
        ({"text": "x", "position": "p", "confidence": 300}, "confidence '300'"),
        ({"text": "x", "answer": "7"}, "no position"),
    ):
        (question,) = pending_after(graph, config, value)
        assert question["kind"] == "proposal" and named in question["error"], question.get("error")
        assert '"position"' in question["error"] and "empty string passes" in question["error"]
        assert graph.get_state(config).values["transcript"] == before  # nothing lost, nothing taken
    critiques = pending_after(
        graph,
        config,
        {
            "text": "Use a token bucket",
            "position": "token bucket",
            "reason": "bursts",
            "confidence": 90,
            "answer": "",
        },
    )
    assert [q["kind"] for q in critiques] == ["critique"] * 3 and not any(
        "error" in q for q in critiques
    )
    mine = [t for t in graph.get_state(config).values["transcript"] if t["speaker"] == ALICE]
    assert mine[0]["content"] == "Use a token bucket"
    assert mine[0]["position"] == {
        "position": "token bucket",
        "reason": "bursts",
        "confidence": 90,
        "answer": "",
    }
    (refused,) = pending_after(
        graph, config, {"text": "weak", "position": "p"}
    )  # a critique states no position
    assert (
        refused["kind"] == "critique"
        and "has position" in refused["error"]
        and '"position"' not in refused["error"]
    )


def test_a_stated_position_counts_in_the_votes_and_an_empty_answer_is_a_pass() -> None:
    graph, config = start(Prompts(), rounds=1, synthesis_method="voting")

    def answer(q: dict[str, Any]) -> Any:
        return (
            {"text": "mine", "position": "sliding window", "confidence": 70}
            if q["kind"] == "refinement"
            else ""
        )

    answer_all(graph, config, answer)
    values = graph.get_state(config).values
    mine = [t for t in values["transcript"] if t["speaker"] == ALICE]
    assert [t["content"] for t in mine] == ["(passed)"] * 4 + ["mine"]
    votes = values["solution"]["verdict"]["votes"]
    assert any(ALICE in v["agents"] and v["position"] == "sliding window" for v in votes)


@pytest.mark.parametrize("protocol", ["phases", "roundtable"])
def test_the_progress_count_leaves_a_persons_turns_out(protocol: str) -> None:
    """The live line's total is model calls: a person's turns are not, so the count ends at its total."""
    progress = Progress(stream=io.StringIO())
    if protocol == "phases":
        graph, context = (
            compile_debate(),
            Context(model="fake", agents=ROLES, humans="alice", rounds=2),
        )
    else:
        graph, context = (
            compile_roundtable(),
            RoundtableContext(model="fake", agents=ROLES, humans="alice", turns=8),
        )
    config: Any = {"configurable": {"thread_id": f"progress-{protocol}"}}
    given: Any = {"problem": PROBLEM}
    while True:
        for event in graph.stream(given, config, context=context, stream_mode="custom"):
            progress.show(event)
        if protocol == "phases" and given is not None and not isinstance(given, Command):
            assert (
                progress.total == 3 + 2 * 3 * 4 + 1
            )  # three model seats of four, two rounds, the synthesis
        pending = graph.get_state(config).interrupts
        if not pending:
            break
        given = Command(resume={i.id: said(i.value) for i in pending})
    values = graph.get_state(config).values
    assert any(t["speaker"] == ALICE for t in values["transcript"])
    assert progress.calls == progress.total == values["spend"]["total"]["calls"]
