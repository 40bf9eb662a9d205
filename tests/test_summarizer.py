"""The summarizer: what a summary record says, and that a summary reads all of its material, chunk by chunk."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from debate_engine.memory import count_messages, count_tokens
from debate_engine.memory.strategies import Plan
from debate_engine.memory.summary_prompt import room
from debate_engine.providers.fake import FakeChatModel
from tests.conftest import make_turn
from tests.support.summaries import summarize_with
from tests.support.summary_jobs import ENTITY, SMALL, RecordingModel, first_plan, job
from tests.test_budget import marked, summary


def test_a_summary_record_has_every_field() -> None:
    turns = [make_turn(i) for i in range(6)]
    events: list[dict[str, Any]] = []
    model = FakeChatModel(words=80)
    record = summarize_with(model, job(first_plan(turns, through=6)), emit=events.append)
    assert record["status"] == "ok" and record["structured"] and record["error"] is None
    assert record["id"] == "sum-architect-r3-6" and record["through"] == 6
    assert (
        record["agent_id"],
        record["role"],
        record["round"],
        record["depth"],
        record["parent_id"],
    ) == ("architect", "architect", 3, 0, None)
    assert record["calls"] == 1 == model.calls
    assert record["tokens_before"] == sum(t["tokens"] for t in turns)
    assert record["chars_before"] == sum(len(t["content"]) for t in turns)
    assert record["tokens_after"] == count_tokens(record["text"]) > 0
    assert record["chars_after"] == len(record["text"])
    assert (record["strategy"], record["reason"], record["model"]) == ("rolling", "test", "fake")
    usage = record["usage"]
    assert (
        usage is not None
        and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    )
    assert [e["event"] for e in events] == ["summarization_started", "summarization_completed"]
    assert events[0]["turns"] == 6 and events[0]["chunks"] == 1
    assert (
        events[1]["summary_id"] == record["id"]
        and events[1]["tokens_after"] == record["tokens_after"]
    )


def test_a_fold_counts_the_previous_summary_in_its_before_size() -> None:
    prev = summary(f"Counters live in {ENTITY}.", through=4, depth=1, ident="p")
    turns = [make_turn(i) for i in (4, 6)]
    plan = Plan(fold=prev, turns=turns, through=7, depth=2, parent_id="p")
    record = summarize_with(FakeChatModel(), job(plan))
    assert record["tokens_before"] == turns[0]["tokens"] + turns[1]["tokens"] + prev["tokens_after"]
    assert record["chars_before"] == len(turns[0]["content"]) + len(turns[1]["content"]) + len(
        prev["text"]
    )
    assert (record["depth"], record["parent_id"], record["through"]) == (2, "p", 7)


def test_a_restart_says_so_in_its_reason() -> None:
    prev = summary("before", through=4, depth=3, ident="p")
    plan = Plan(fold=prev, turns=[make_turn(4)], through=5, depth=0, parent_id="p", restarted=True)
    record = summarize_with(FakeChatModel(), job(plan))
    assert record["reason"] == "test; depth cap: the chain restarts from a summary of itself"
    assert (record["depth"], record["parent_id"]) == (0, "p")


def test_material_larger_than_the_recent_slice_is_read_in_chunks_and_all_of_it_is_read() -> None:
    turns = [make_turn(i, content=marked(i, 30)) for i in range(3, 15)]  # 12 turns
    assert {t["tokens"] for t in turns} == {102}
    cost = 102 + 24
    prev = summary(f"Counters live in {ENTITY}.", through=3, ident="p")
    prev["facets"]["domain_entities"] = [ENTITY]
    the_job = job(
        Plan(fold=prev, turns=turns, through=15, depth=1, parent_id="p"),
        budget=SMALL,
        max_output_tokens=256,
    )
    # the window (768) less the prompt around the turns and the folded summary's share: 616 tokens, 4 turns;
    # after the first chunk, the interim summary is folded in whole and the chunks give way to it
    per_chunk = room(the_job) // cost
    fewest = -(-len(turns) // per_chunk)
    assert (per_chunk, fewest) == (4, 3)
    model = RecordingModel(words=40)
    record = summarize_with(model, the_job)
    assert record["status"] == "ok"
    assert record["calls"] == model.calls == len(model.prompts) >= fewest
    assert record["through"] == 15
    for system, user in model.prompts:
        assert count_messages(system, user) <= SMALL.total
    for t in turns:
        assert any(t["content"] in user for _, user in model.prompts), (
            f"turn {t['seq']} was never read"
        )
    assert ENTITY in model.prompts[0][1], "the previous summary is folded into the first chunk"
    assert ENTITY in record["facets"]["domain_entities"]


def test_every_chunk_is_read_whole_even_with_long_agent_ids_and_a_long_summary_prompt() -> None:
    """ENGINE BUG (memory/budget.py turn_cost, memory/summarizer.py _call): chunks are packed by turn_cost, which
    under-counts the headings of long agent ids (config ids are free text); a chunk then overflows its view, the
    view silently leaves turns out, and the record still claims to cover them."""
    a, b = (
        "principal_platform_architect_emea_region",
        "site_reliability_engineer_oncall_emea_region",
    )
    turns = [
        make_turn(
            i, kind="critique", speaker=b, target=a, content=f"Point {i}: quotas.", round_no=100 + i
        )
        for i in range(60)
    ]
    model = RecordingModel(words=40)
    plan = Plan(
        fold=summary("s " * 3000, through=0, ident="p"),
        turns=turns,
        through=60,
        depth=1,
        parent_id="p",
    )
    base = job(plan, budget=SMALL, max_output_tokens=256)
    long_prompt = replace(  # a custom summaryPromptPath fills its half of the system slice
        base,
        instructions=lambda length: "Summarize carefully. " * 300,
        instruction="Summarize the history above, and fold the previous summary into the new one. "
        "Fill every field you can; use empty lists where there is nothing to say.",
    )
    record = summarize_with(model, long_prompt)
    assert record["status"] == "ok" and record["through"] == 60
    never_read = [
        t["seq"] for t in turns if not any(t["content"] in user for _, user in model.prompts)
    ]
    assert never_read == [], f"covered through 60 but never shown to the model: {never_read}"
