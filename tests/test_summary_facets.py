"""Facets and length: identifiers survive a forgetful model, and a summary is cut only at a boundary."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from debate_engine.memory import count_tokens, merge_facets, render_summary
from debate_engine.memory.budget import SHORTENED_NOTE, summary_text
from debate_engine.memory.facets import clip_at_boundary, empty_facets
from debate_engine.memory.strategies import Plan
from debate_engine.providers.fake import FakeChatModel
from tests.conftest import make_turn
from tests.support.summaries import summarize_with
from tests.support.summary_jobs import ENTITY, first_plan, job
from tests.test_budget import summary


class DroppingModel(FakeChatModel):
    """Structured output that never repeats any identifier (a forgetful model)."""

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Any:
        def fill(messages: Any) -> Any:
            self.calls += 1
            empty = {
                name: [] for name in schema.model_fields if name != "narrative"
            }  # every field is required
            parsed = schema(narrative="They talked about limits in general.", **empty)
            return (
                {"raw": AIMessage("x"), "parsed": parsed, "parsing_error": None}
                if include_raw
                else parsed
            )

        return RunnableLambda(fill)


def test_facets_of_the_previous_summary_survive_a_forgetful_model() -> None:
    prev = summary(f"Entities: {ENTITY}\n\nQuotas per tenant.", through=4, ident="p")
    prev["facets"]["domain_entities"] = [ENTITY]
    prev["narrative"] = "Quotas per tenant."
    turns = [make_turn(i, content="Later talk about something else entirely.") for i in range(4, 9)]
    second = summarize_with(
        DroppingModel(), job(Plan(fold=prev, turns=turns, through=9, depth=1, parent_id="p"))
    )
    assert second["status"] == "ok"
    assert ENTITY in second["facets"]["domain_entities"] and ENTITY in second["text"]
    third = summarize_with(
        DroppingModel(),
        job(Plan(fold=second, turns=[make_turn(9)], through=10, depth=2, parent_id=second["id"])),
    )
    assert ENTITY in third["facets"]["domain_entities"] and ENTITY in third["text"]


def test_an_early_identifier_survives_the_chain_from_the_turn_itself() -> None:
    early = [
        make_turn(0, content=f"Store counters in redis_cluster_v7 for {ENTITY}."),
        make_turn(1),
        make_turn(2),
    ]
    first = summarize_with(FakeChatModel(), job(first_plan(early)))
    assert ENTITY in first["facets"]["domain_entities"]
    later = [make_turn(i, content="Later talk about something else entirely.") for i in range(3, 9)]
    second = summarize_with(
        DroppingModel(),
        job(Plan(fold=first, turns=later, through=9, depth=1, parent_id=first["id"])),
    )
    assert ENTITY in second["text"] and "redis_cluster_v7" in second["text"]


def test_max_length_is_asked_the_answer_kept_whole_and_a_view_shortens_it_at_a_boundary_saying_so() -> (
    None
):
    lengths: list[int] = []
    record = summarize_with(
        FakeChatModel(words=900),
        job(first_plan([make_turn(i) for i in range(10)]), max_length=400, lengths=lengths),
    )
    assert lengths and max(lengths) <= 400, "the length is asked of the model"
    full = render_summary(record["narrative"], record["facets"])
    assert record["text"] == full and len(full) > 400, (
        "a verbose answer that fitted its allowance is kept whole"
    )
    shown, cut = summary_text(record, 100)
    assert cut and count_tokens(shown) <= 100 and shown.endswith(SHORTENED_NOTE)
    assert shown.startswith("Identifiers: rate_limiter.py"), "the identifiers come first"
    assert set(shown.split()) <= set(full.split()) | {"…"} | set(SHORTENED_NOTE.split()), (
        "no word cut in half"
    )


def test_a_model_without_structured_output_writes_plain_text() -> None:
    model = FakeChatModel(structured=False, words=30)
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)])))
    assert record["status"] == "ok" and record["structured"] is False and record["text"]
    assert {k: v for k, v in record["facets"].items() if k != "identifiers"} == empty_facets()
    assert record["facets"]["identifiers"] == ["rate_limiter.py"], (
        "the identifiers come from the turns, by code"
    )


def test_clip_never_cuts_a_word() -> None:
    text = "First sentence here. Second sentence is longer than the rest of it. Third."
    assert clip_at_boundary(text, 40) == "First sentence here."
    assert clip_at_boundary("onlyonewordthatistoolong", 10) == ""
    assert clip_at_boundary("short", 10) == "short"


def test_facets_merge_caps_and_drops_oldest_first() -> None:
    old = empty_facets()
    old["domain_entities"] = [f"id_{i}" for i in range(30)]
    new = empty_facets()
    new["domain_entities"] = ["id_new", "ID_5"]
    merged = merge_facets(old, new)
    assert len(merged["domain_entities"]) == 30
    assert merged["domain_entities"][-2:] == ["id_new", "ID_5"]
    assert "id_0" not in merged["domain_entities"] and "id_1" in merged["domain_entities"]
    assert "id_5" not in merged["domain_entities"], "duplicates are merged case-insensitively"
