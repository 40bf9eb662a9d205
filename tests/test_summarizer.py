"""Summarizing: structured records, the chain, max length, failures that lose nothing."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from debate_engine.providers.fake import FakeChatModel
from debate_engine.memory import (
    ModelInfo,
    SummarizationSettings,
    SummaryRequest,
    clip_at_boundary,
    get_strategy,
    make_budget,
    merge_facets,
    render_summary,
    summarize,
)
from debate_engine.memory.facets import empty_facets
from tests.conftest import make_turn

INFO = ModelInfo(spec="fake", provider="fake", temperature=0.2)


def request(turns: list[Any], previous: Any = None, strategy: str = "rolling", **settings: Any) -> SummaryRequest:
    s = SummarizationSettings(**settings)
    return SummaryRequest(
        agent_id="architect",
        role="architect",
        round=3,
        reason="test",
        strategy=strategy,
        plan=get_strategy(strategy).plan(turns, previous, s.preserve_recent),
        settings=s,
        budget=make_budget(8192, 1024),
        system_prompt="Summarize.",
        instruction="Summarize the history above.",
    )


class DroppingModel(FakeChatModel):
    """Structured output that never repeats any identifier (a forgetful model)."""

    def with_structured_output(self, schema: Any, *, include_raw: bool = False, **kwargs: Any) -> Any:
        from langchain_core.runnables import RunnableLambda

        def fill(messages: Any) -> Any:
            parsed = schema(narrative="They talked about limits in general.")
            return {"raw": AIMessage("x"), "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(fill)


def test_a_summary_record_has_every_field_and_covers_turns() -> None:
    turns = [make_turn(i) for i in range(8)]
    events: list[dict[str, Any]] = []
    record = summarize(FakeChatModel(words=80), INFO, request(turns), emit=events.append)
    assert record["status"] == "ok" and record["structured"]
    assert record["covered_turn_ids"] == [f"t{i}" for i in range(6)]  # the 2 newest stay verbatim
    assert record["depth"] == 0 and record["parent_id"] is None
    assert record["tokens_before"] > record["tokens_after"] > 0
    assert record["model"] == "fake" and record["provider"] == "fake" and record["temperature"] == 0.2
    assert [e["event"] for e in events] == ["summarization_started", "summarization_completed"]
    assert events[1]["tokens_after"] == record["tokens_after"]


def test_rolling_chains_by_parent_and_depth() -> None:
    turns = [make_turn(i) for i in range(8)]
    first = summarize(FakeChatModel(), INFO, request(turns[:5]))
    second = summarize(FakeChatModel(), INFO, request(turns, previous=first))
    assert second["parent_id"] == first["id"] and second["depth"] == 1
    assert set(first["covered_turn_ids"]) < set(second["covered_turn_ids"])
    fresh = summarize(FakeChatModel(), INFO, request(turns, previous=first, strategy="fresh"))
    assert fresh["depth"] == 0 and fresh["parent_id"] is None


def test_an_early_technical_term_survives_two_rounds_of_summaries() -> None:
    early = [
        make_turn(0, content="Store counters in redis_cluster_v7 behind quota_service.go."),
        make_turn(1),
        make_turn(2),
    ]
    first = summarize(FakeChatModel(), INFO, request(early, preserve_recent=0))
    assert "redis_cluster_v7" in first["text"]
    later = early + [make_turn(i, content="Later talk about something else entirely.") for i in range(3, 9)]
    second = summarize(DroppingModel(), INFO, request(later, previous=first, preserve_recent=0))
    third = summarize(DroppingModel(), INFO, request(later + [make_turn(20)], previous=second, preserve_recent=0))
    assert "redis_cluster_v7" in third["text"] and "quota_service.go" in third["text"]


def test_max_length_is_enforced_at_a_boundary() -> None:
    record = summarize(FakeChatModel(words=900), INFO, request([make_turn(i) for i in range(10)], max_length=400))
    assert len(record["text"]) <= 400
    full = render_summary(record["narrative"], record["facets"], 100_000)
    assert set(record["text"].split()) <= set(full.split()) | {"…"}, "no word was cut in half"


def test_clip_never_cuts_a_word() -> None:
    text = "First sentence here. Second sentence is longer than the rest of it. Third."
    assert clip_at_boundary(text, 40) == "First sentence here."
    assert clip_at_boundary("onlyonewordthatistoolong", 10) == ""
    assert clip_at_boundary("short", 10) == "short"


def test_a_model_without_structured_output_writes_plain_text() -> None:
    record = summarize(FakeChatModel(structured=False), INFO, request([make_turn(i) for i in range(5)]))
    assert record["status"] == "ok" and record["structured"] is False and record["text"]


def test_transport_errors_are_retried_once_with_backoff() -> None:
    model = FakeChatModel(fail="transport")
    sleeps: list[float] = []
    record = summarize(model, INFO, request([make_turn(i) for i in range(5)]), sleep=sleeps.append)
    assert record["status"] == "failed" and "ConnectionError" in record["error"]
    assert model.calls == 2 and sleeps == [0.25]
    assert record["covered_turn_ids"] == []


def test_invalid_output_is_not_retried() -> None:
    model = FakeChatModel(fail="invalid")
    events: list[dict[str, Any]] = []
    record = summarize(model, INFO, request([make_turn(i) for i in range(5)]), emit=events.append)
    assert record["status"] == "failed" and model.calls == 1
    assert events[-1]["event"] == "summarization_error"


def test_facets_merge_caps_and_drops_oldest_first() -> None:
    old = empty_facets()
    old["domain_entities"] = [f"id_{i}" for i in range(30)]
    new = empty_facets()
    new["domain_entities"] = ["id_new", "ID_5"]
    merged = merge_facets(old, new)
    assert len(merged["domain_entities"]) == 30
    assert merged["domain_entities"][-1] == "ID_5" and "id_new" in merged["domain_entities"]
    assert "id_0" not in merged["domain_entities"]
