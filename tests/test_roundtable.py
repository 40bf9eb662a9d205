"""The roundtable: one speaker per turn, a shared rolling summary, a bounded view, nothing forgotten."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from debate_engine import RoundtableContext, compile_roundtable
from debate_engine.config.resolve import ConfigError, resolve


def run(
    context: RoundtableContext,
    thread: str = "t",
    graph: Any = None,
    problem: str = "Design a rate limiter",
):
    graph = graph or compile_roundtable()
    return graph.invoke(
        {"problem": problem}, {"configurable": {"thread_id": thread}}, context=context
    )


def check_views(values: dict[str, Any]) -> None:
    """Every turn saw all earlier turns: verbatim from ``from_seq``, the rest through the summary it names."""
    summaries = {s["id"]: s for s in values["summary_log"]}
    for turn in values["transcript"]:
        view = turn["view"]
        assert view["to_seq"] == turn["seq"], "a turn sees every turn before it"
        assert view["prompt_tokens"] <= view["budget_tokens"]
        covered = summaries[view["summary_id"]]["through"] if view["summary_id"] else 0
        assert view["from_seq"] <= covered, (
            f"{turn['id']}: turns {view['from_seq']}..{covered} are in no tier"
        )
        assert view["turns"] == view["to_seq"] - view["from_seq"] or turn["kind"] == "synthesis"


def test_round_robin_turns_then_a_synthesis() -> None:
    values = run(
        RoundtableContext(model="fake:words=20", agents="architect,security,kiss", turns=7)
    )
    speakers = [t["speaker"] for t in values["transcript"]]
    assert speakers == [
        "architect",
        "security",
        "kiss",
        "architect",
        "security",
        "kiss",
        "architect",
        "judge",
    ]
    assert [t["round"] for t in values["transcript"][:-1]] == list(range(1, 8))
    assert {t["kind"] for t in values["transcript"][:-1]} == {"message"}
    assert values["solution"]["structured"] and values["status"]["phase"] == "done"
    check_views(values)


def test_the_summary_folds_the_oldest_turns_every_fifty_and_keeps_fifty_to_ninety_nine_verbatim() -> (
    None
):
    values = run(RoundtableContext(model="fake:words=4", agents="architect,security", turns=230))
    log = values["summary_log"]
    assert [s["through"] for s in log] == [
        50,
        100,
        150,
    ]  # at turns 100, 150 and 200: the oldest 50 folded in
    assert all(s["agent_id"] == "table" and s["status"] == "ok" for s in log)
    verbatim = [t["view"]["turns"] for t in values["transcript"][:-1]]
    assert max(verbatim[99:]) == 99 and min(verbatim[99:]) == 50
    check_views(values)


def test_a_smaller_window_still_bounds_every_prompt_and_forgets_nothing() -> None:
    values = run(
        RoundtableContext(
            model="fake:words=120",
            agents="architect,security,kiss",
            turns=120,
            context_window=2048,
            max_output_tokens=256,
        )
    )
    assert all(t["view"]["budget_tokens"] == 2048 - 256 for t in values["transcript"])
    assert any(
        s["reason"].startswith("overflow") for s in values["summary_log"]
    )  # the recent slice was full
    check_views(values)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.integers(1, 200),
    window=st.sampled_from([1024, 2048, 4096, 16384]),
    split=st.tuples(st.integers(128, 2048), st.integers(64, 1024), st.integers(256, 5120)),
)
def test_the_budget_guarantee_holds_for_any_view_split(
    words: int, window: int, split: tuple[int, int, int]
) -> None:
    system, summary, recent = split
    values = run(
        RoundtableContext(
            model=f"fake:words={words}",
            agents="architect,kiss",
            turns=40,
            context_window=window,
            max_output_tokens=200,
            view_system=system,
            view_summary=summary,
            view_recent=recent,
            summary_every=10,
        )
    )
    limit = min(window, system + summary + recent + 200) - 200
    assert all(t["view"]["budget_tokens"] == limit for t in values["transcript"])
    check_views(values)


def test_an_identifier_once_in_the_facets_stays_in_the_registry() -> None:
    graph = compile_roundtable()
    values = run(
        RoundtableContext(
            model="fake:words=30", agents="architect,security", turns=400, summary_every=20
        ),
        graph=graph,
        problem="Shard by tenant_51_9epxb in rate_limiter.py",
    )
    state = graph.get_state({"configurable": {"thread_id": "t"}}).values
    first = values["summary_log"][0]["facets"]["domain_entities"]
    assert first, "the first summary recorded identifiers"
    registry = state["facets"]["domain_entities"]
    assert len(values["summary_log"]) >= 10  # "any number of later summaries"
    for item in first:
        entry = registry[" ".join(item.split()).casefold()]
        assert entry["first_seen"] == values["summary_log"][0]["through"] and entry["count"] >= 1
    total = sum(len(s["facets"]["domain_entities"]) for s in values["summary_log"])
    assert sum(e["count"] for e in registry.values()) == total  # every sighting counted, none lost


def test_the_judge_and_the_report_are_shown_what_every_summary_recorded() -> None:
    from debate_engine.app.reports.markdown import render_report
    from debate_engine.nodes.synthesize import plan

    graph = compile_roundtable()
    run(
        RoundtableContext(
            model="fake:words=30", agents="architect,security", turns=120, summary_every=20
        ),
        graph=graph,
        problem="Shard by tenant_51_9epxb in rate_limiter.py",
    )
    state = graph.get_state({"configurable": {"thread_id": "t"}}).values
    entities = state["facets"]["domain_entities"]
    top = max(entities.values(), key=lambda e: e["count"])
    assert top["count"] > 1
    judge_prompt = plan(state)[0].user
    assert "Recorded across the debate's summaries" in judge_prompt and top["text"] in judge_prompt
    report = render_report(state)
    assert (
        "## Recorded across the summaries" in report
        and f"| Entities | {top['text']} | {top['count']} |" in report
    )


def test_the_moderator_picks_speakers_and_may_end_the_debate() -> None:
    graph = compile_roundtable()
    values = run(
        RoundtableContext(
            model="fake:words=20", agents="architect,security,kiss", turns=30, order="moderator"
        ),
        graph=graph,
    )
    state = graph.get_state({"configurable": {"thread_id": "t"}}).values
    assert state["moderation"]["reason"] and state["moderation"]["speaker"] in {
        "architect",
        "security",
        "kiss",
    }
    # the fake moderator always declares convergence: it counts once everyone has spoken twice
    spoken = Counter(t["speaker"] for t in values["transcript"] if t["kind"] == "message")
    assert (
        state["stopped"] == "convergence"
        and min(spoken.values()) == 2 == spoken.most_common()[-1][1]
    )
    assert set(spoken) == {"architect", "security", "kiss"}
    assert values["transcript"][-1]["kind"] == "synthesis"


def test_a_new_problem_on_the_same_thread_starts_a_clean_roundtable() -> None:
    graph = compile_roundtable(checkpointer=InMemorySaver())
    run(RoundtableContext(model="fake:words=10", turns=5), graph=graph, problem="First")
    second = run(RoundtableContext(model="fake:words=10", turns=3), graph=graph, problem="Second")
    assert second["problem"] == "Second" and len(second["transcript"]) == 4
    assert [t["seq"] for t in second["transcript"]] == [0, 1, 2, 3]


def test_resume_continues_a_stopped_roundtable_with_its_settings() -> None:
    graph = compile_roundtable(checkpointer=InMemorySaver(), interrupt_before=["turn"])
    config = {"configurable": {"thread_id": "r"}}
    graph.invoke(
        {"problem": "p"},
        config,
        context=RoundtableContext(model="fake:words=10", turns=4, context_window=2048),
    )
    for _ in range(10):
        if graph.get_state(config).values.get("solution"):
            break
        graph.invoke(None, config)  # no context: the roundtable's settings are in state
    values = graph.get_state(config).values
    assert values["turn_count"] == 4 and values["solution"]
    assert all(t["view"]["budget_tokens"] == 2048 - 1024 for t in values["transcript"])


def test_bad_roundtable_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="order: 'loudest' is not an order"):
        resolve(RoundtableContext(model="fake", order="loudest"))
    with pytest.raises(ConfigError, match="turns: 0 is out of range"):
        resolve(RoundtableContext(model="fake", turns=0))


def _gap_run(model: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    graph = compile_roundtable(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "gap"}}
    events = [
        c
        for c in graph.stream(
            {"problem": "p"},
            config,
            stream_mode="custom",
            context=RoundtableContext(
                model=model,
                agents="architect,kiss",
                turns=30,
                context_window=2048,
                max_output_tokens=256,
            ),
        )
    ]
    return events, graph.get_state(config).values


def test_turns_that_fit_neither_tier_are_announced_exactly_when_summaries_fail() -> None:
    from debate_engine.app.cli.progress import Progress

    events, values = _gap_run("fake:fail=summaries,words=120")
    spoken = {t["round"]: t for t in values["transcript"] if t["kind"] == "message"}
    gaps = [e for e in events if e.get("event") == "contribution" and e.get("unseen")]
    assert gaps and all(s["status"] == "failed" for s in values["summary_log"])
    for event in (
        e for e in gaps if e["kind"] == "message"
    ):  # the judge's synthesis may be among them too
        first, end = event["unseen"]
        view = spoken[event["round"]]["view"]
        assert (
            first == 0 and end == view["from_seq"] > 0
        )  # no summary covers anything: the oldest turns are out
    out = io.StringIO()
    progress = Progress(stream=out)
    for event in events:
        progress.show(event)
    warned = [
        line
        for line in out.getvalue().splitlines()
        if "fit neither its summary nor its view" in line
    ]
    assert (
        len(warned) == 3
    )  # once per speaker (and the judge) while the gap starts at the same place

    events, values = _gap_run(
        "fake:words=120"
    )  # summaries work: every turn is in one tier or the other
    assert not [e for e in events if e.get("event") == "contribution" and e.get("unseen")]
    assert values["summary_log"] and all(s["status"] == "ok" for s in values["summary_log"])


def test_a_model_that_cannot_summarize_is_asked_again_after_a_growing_pause() -> None:
    _, values = _gap_run("fake:fail=summaries,words=120")
    tried = [s["round"] for s in values["summary_log"]]
    assert len(tried) >= 4
    # the overflow rule fires on every turn; the pause doubles after each failure in a row: 1, 2, 4, 8 turns
    assert [b - a for a, b in zip(tried, tried[1:], strict=False)] == [1, 2, 4, 8, 16][
        : len(tried) - 1
    ]


def test_the_pause_counts_only_this_agent_s_failures_since_its_last_good_summary() -> None:
    from debate_engine.nodes.summarize import backing_off

    def rec(agent: str, round_no: int, status: str) -> Any:
        return {"agent_id": agent, "round": round_no, "status": status}

    log = [
        rec("a", 3, "failed"),
        rec("a", 4, "failed"),
        rec("a", 6, "ok"),
        rec("a", 10, "failed"),
        rec("b", 11, "failed"),
        rec("a", 11, "failed"),
        rec("b", 12, "failed"),
    ]
    # a: two failures in a row since its good summary, the last at 11: wait 2 turns
    assert [backing_off(log, "a", r) for r in (11, 12, 13)] == [True, True, False]
    assert [backing_off(log, "b", r) for r in (12, 13, 14)] == [True, True, False]
    assert not backing_off(log, "c", 1) and not backing_off(log[:3], "a", 7)


def test_the_moderator_may_declare_convergence_only_once_every_participant_has_spoken_twice() -> (
    None
):
    from debate_engine.nodes.moderate import apply
    from tests.conftest import make_turn

    graph = compile_roundtable(interrupt_before=["turn", "moderate"])
    run(
        RoundtableContext(model="fake", agents="architect,security", turns=20, order="moderator"),
        graph=graph,
    )
    base = graph.get_state({"configurable": {"thread_id": "t"}}).values
    reply: Any = {
        "parsed": {"speaker": "architect", "converged": True, "reason": "done"},
        "content": "",
    }

    def after(speakers: list[str]) -> dict[str, Any]:
        turns = [
            make_turn(i, speaker=s, kind="message", round_no=i + 1) for i, s in enumerate(speakers)
        ]
        state = {**base, "transcript": turns, "turn_count": len(turns)}
        return apply(state, [], [reply])  # type: ignore[arg-type]

    assert (
        after(["architect"] * 6)["moderation"]["converged"] is False
    )  # six turns, but security never spoke
    assert after(["architect", "security"] * 2)["moderation"]["converged"] is True


def test_the_registry_records_only_what_good_summaries_recorded() -> None:
    from debate_engine.memory.facets import empty_facets
    from debate_engine.nodes.summarize import registry_of

    def record(status: str, through: int, entities: list[str]) -> Any:
        return {
            "status": status,
            "through": through,
            "facets": {**empty_facets(), "domain_entities": entities},
        }

    registry = registry_of(
        [record("ok", 10, ["Shard_A", "shard_a "]), record("failed", 12, ["shard_b"])]
    )
    assert list(registry["domain_entities"]) == ["shard_a"]  # keyed case- and space-insensitively
    assert registry["domain_entities"]["shard_a"]["first_seen"] == 10
