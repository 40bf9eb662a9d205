"""Strategies and the summarizer: what a summary reads, that it reads all of it, and failures that lose nothing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from pydantic import Field

from debate_engine.memory import (
    SummarizationSettings,
    SummaryJob,
    count_messages,
    count_tokens,
    make_budget,
    merge_facets,
    render_summary,
    summary_material,
)
from debate_engine.memory.facets import clip_at_boundary, empty_facets
from debate_engine.memory.strategies import Fresh, Plan, Rolling, get_strategy, keep_recent
from debate_engine.memory.summarizer import target_length
from debate_engine.providers.fake import FakeChatModel
from tests.conftest import make_turn
from tests.support.summaries import summarize_with
from tests.test_budget import marked, summary

BIG = make_budget(8192, 1024)
SMALL = make_budget(1024, 256)  # total 768: system 192, summary 96, recent min(480, 768 - 192 - 96 - 48) = 432
ENTITY = "tenant_51_9epxb"


def seqs(turns) -> list[int]:
    return [t["seq"] for t in turns]


def own(seq_list: list[int]):
    return [make_turn(s, speaker="architect") for s in seq_list]


# --- strategies ---------------------------------------------------------------------------------------------


def test_rolling_folds_the_previous_summary_and_keeps_the_newest_verbatim() -> None:
    uncovered = own([3, 5, 7, 9, 11])
    prev = summary("before", through=3, depth=1, ident="p")
    plan = Rolling(max_depth=3).plan(uncovered, prev, keep=2, whole=None)
    assert plan.fold is prev and seqs(plan.turns) == [3, 5, 7]
    assert plan.through == 9, "the seq of the first kept turn"
    assert (plan.depth, plan.parent_id, plan.restarted) == (2, "p", False)


def test_rolling_with_nothing_kept_covers_through_the_newest_turn() -> None:
    plan = Rolling().plan(own([3, 5, 7, 9, 11]), summary("before", through=3, ident="p"), keep=0, whole=None)
    assert seqs(plan.turns) == [3, 5, 7, 9, 11] and plan.through == 12


def test_the_first_rolling_summary_has_no_parent() -> None:
    plan = Rolling().plan(own([0, 2, 4]), None, keep=1, whole=None)
    assert (plan.fold, seqs(plan.turns), plan.through, plan.depth, plan.parent_id) == (None, [0, 2], 4, 0, None)


def test_rolling_when_everything_uncovered_is_kept_covers_what_it_covered() -> None:
    plan = Rolling().plan(own([3, 5]), summary("before", through=3, ident="p"), keep=2, whole=None)
    assert plan.turns == [] and plan.through == 3


def test_rolling_with_nothing_uncovered_keeps_the_previous_coverage() -> None:
    plan = Rolling().plan([], summary("before", through=12, ident="p"), keep=2, whole=None)
    assert plan.turns == [] and plan.through == 12 and plan.fold is not None


@pytest.mark.parametrize(("max_depth", "prev_depth", "depth", "restarted"),
                         [(3, 2, 3, False), (3, 3, 0, True), (0, 0, 0, True), (5, 4, 5, False)])
def test_at_max_depth_the_chain_restarts_instead_of_stopping(max_depth, prev_depth, depth, restarted) -> None:
    prev = summary("before", through=3, depth=prev_depth, ident="p")
    plan = Rolling(max_depth=max_depth).plan(own([3, 5, 7]), prev, keep=1, whole=None)
    assert (plan.depth, plan.restarted) == (depth, restarted)
    assert plan.parent_id == "p" and plan.fold is prev, "a restart still folds what the chain knew"
    assert seqs(plan.turns) == [3, 5] and plan.through == 7


def test_fresh_rereads_the_whole_perspective_when_given() -> None:
    whole = own([0, 1, 3, 5, 7, 9, 11])
    prev = summary("before", through=7, depth=2, ident="p")
    plan = Fresh().plan(whole[4:], prev, keep=2, whole=whole)
    assert plan.fold is None and seqs(plan.turns) == [0, 1, 3, 5, 7] and plan.through == 9
    assert (plan.depth, plan.parent_id, plan.restarted) == (0, None, False)
    assert Fresh().plan(whole[4:], prev, keep=0, whole=whole).through == 12


def test_fresh_without_the_whole_perspective_folds_like_rolling() -> None:
    uncovered = own([7, 9, 11])
    prev = summary("before", through=7, depth=3, ident="p")
    plan = Fresh(max_depth=3).plan(uncovered, prev, keep=1, whole=None)
    assert plan.fold is prev and seqs(plan.turns) == [7, 9] and plan.through == 11
    assert (plan.depth, plan.parent_id, plan.restarted) == (0, "p", True)


def test_strategies_by_name() -> None:
    assert isinstance(get_strategy("rolling", 2), Rolling) and get_strategy("rolling", 2).max_depth == 2
    assert isinstance(get_strategy("fresh"), Fresh)
    with pytest.raises(ValueError, match="unknown summary strategy 'magic'"):
        get_strategy("magic")


def test_keep_recent_keeps_at_most_preserve_and_only_what_fits() -> None:
    turns = [make_turn(i, content=" ".join(["word"] * 10 * (i + 1))) for i in range(4)]  # 10, 20, 30, 40 tokens
    newest_two = (40 + 24) + (30 + 24)
    assert keep_recent(turns, 2, 10_000) == 2
    assert keep_recent(turns, 3, 10_000) == 3
    assert keep_recent(turns, 0, 10_000) == 0
    assert keep_recent(turns, 2, newest_two) == 2
    assert keep_recent(turns, 2, newest_two - 1) == 1
    assert keep_recent(turns, 2, 40 + 24 - 1) == 0


# --- planning: summary_material -------------------------------------------------------------------------------


def debate_transcript(rounds: int = 3, words: int = 30):
    """Briefing, then per round: two refinements and two crossed critiques."""
    out = [make_turn(0, kind="briefing", speaker="moderator", content=marked(0, words))]
    for r in range(1, rounds + 1):
        for kind, speaker, target in (("refinement", "architect", None), ("refinement", "security", None),
                                      ("critique", "security", "architect"), ("critique", "architect", "security")):
            seq = len(out)
            out.append(make_turn(seq, kind=kind, speaker=speaker, target=target, round_no=r,
                                 content=marked(seq, words)))
    return out


def architect_view(transcript) -> list[int]:
    """What the architect sees, by the rule: shared kinds, its own positions, critiques aimed at it."""
    return [t["seq"] for t in transcript
            if t["kind"] == "briefing" or (t["kind"] == "refinement" and t["speaker"] == "architect")
            or (t["kind"] == "critique" and t["target"] == "architect")]


def test_rolling_material_is_every_uncovered_turn_but_the_kept_tail() -> None:
    transcript = debate_transcript()
    seen = architect_view(transcript)
    assert seen == [0, 1, 3, 5, 7, 9, 11]
    s = SummarizationSettings(preserve_recent=2)
    first = summary_material(transcript, "architect", None, s, BIG)
    assert first.strategy == "rolling" and first.plan.fold is None
    assert seqs(first.plan.turns) == [0, 1, 3, 5, 7] and first.plan.through == 9
    prev = summary("before", through=5, ident="p")
    later = summary_material(transcript, "architect", prev, s, BIG)
    assert later.plan.fold is prev and seqs(later.plan.turns) == [5, 7] and later.plan.through == 9


def test_fresh_material_is_the_whole_perspective_when_it_fits_the_recent_slice() -> None:
    transcript = debate_transcript()
    s = SummarizationSettings(method="fresh", preserve_recent=1)
    prev = summary("before", through=5, ident="p")
    small = summary_material(transcript, "architect", prev, s, BIG)
    assert small.strategy == "fresh" and small.plan.fold is None
    assert seqs(small.plan.turns) == [0, 1, 3, 5, 7, 9] and small.plan.through == 11
    long = debate_transcript(rounds=3, words=300)  # 7 turns of ~900 tokens: more than BIG.recent (4432)
    assert sum(t["tokens"] + 24 for t in long if t["seq"] in architect_view(long)) > BIG.recent
    folded = summary_material(long, "architect", prev, s, BIG)
    assert folded.plan.fold is prev and seqs(folded.plan.turns) == [5, 7, 9] and folded.plan.through == 11


def test_the_kept_tail_is_limited_by_half_the_recent_slice() -> None:
    transcript = debate_transcript(rounds=3, words=100)  # ~300 tokens a turn
    per_turn = transcript[11]["tokens"] + 24
    assert per_turn > SMALL.recent // 2
    material = summary_material(transcript, "architect", None, SummarizationSettings(preserve_recent=2), SMALL)
    assert material.plan.through == 12 and seqs(material.plan.turns) == architect_view(transcript)


def test_with_nothing_to_summarize_the_plan_covers_nothing() -> None:
    material = summary_material([], "architect", None, SummarizationSettings(), BIG)
    assert material.plan == Plan(fold=None, turns=[], through=0, depth=0, parent_id=None)


# --- the summarizer ------------------------------------------------------------------------------------------


class RecordingModel(FakeChatModel):
    """The fake model, keeping every prompt it was sent; optionally failing its n-th call."""

    prompts: list[list[str]] = Field(default_factory=list)
    fail_on_call: int = 0

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.prompts.append([str(m.content) for m in messages])
        if self.fail_on_call and len(self.prompts) == self.fail_on_call:
            self.calls += 1
            raise ConnectionError(f"fake failure on call {self.fail_on_call}")
        return super()._reply(messages)


class DroppingModel(FakeChatModel):
    """Structured output that never repeats any identifier (a forgetful model)."""

    def with_structured_output(self, schema: Any, *, include_raw: bool = False, **kwargs: Any) -> Any:
        def fill(messages: Any) -> Any:
            self.calls += 1
            parsed = schema(narrative="They talked about limits in general.")
            return {"raw": AIMessage("x"), "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(fill)


class CutModel(BaseChatModel):
    """Plain text only; the first ``cut`` replies stop at the output limit (finish_reason "length")."""

    cut: int = 1
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "cut"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        reason = "length" if self.calls <= self.cut else "stop"
        message = AIMessage("They chose a token bucket.", response_metadata={"finish_reason": reason})
        return ChatResult(generations=[ChatGeneration(message=message)])


def job(plan: Plan, *, budget=BIG, max_length: int = 2500, max_output_tokens: int = 1024,
        lengths: list[int] | None = None, retries: int = 1) -> SummaryJob:
    def system_prompt(length: int) -> str:
        if lengths is not None:
            lengths.append(length)
        return f"Summarize the architect's history in at most {length} characters."

    return SummaryJob(
        agent_id="architect", role="architect", round=3, reason="test", strategy="rolling", plan=plan,
        max_length=max_length, max_output_tokens=max_output_tokens, budget=budget, system_prompt=system_prompt,
        instruction="Summarize the history above.", model_spec="fake", retries=retries,
    )


def first_plan(turns, through=None) -> Plan:
    return Plan(fold=None, turns=turns, through=through if through is not None else turns[-1]["seq"] + 1,
                depth=0, parent_id=None)


def test_a_summary_record_has_every_field() -> None:
    turns = [make_turn(i) for i in range(6)]
    events: list[dict[str, Any]] = []
    model = FakeChatModel(words=80)
    record = summarize_with(model, job(first_plan(turns, through=6)), emit=events.append)
    assert record["status"] == "ok" and record["structured"] and record["error"] is None
    assert record["id"] == "sum-architect-r3-6" and record["through"] == 6
    assert (record["agent_id"], record["role"], record["round"], record["depth"], record["parent_id"]) == (
        "architect", "architect", 3, 0, None)
    assert record["calls"] == 1 == model.calls
    assert record["tokens_before"] == sum(t["tokens"] for t in turns)
    assert record["chars_before"] == sum(len(t["content"]) for t in turns)
    assert record["tokens_after"] == count_tokens(record["text"]) > 0
    assert record["chars_after"] == len(record["text"])
    assert (record["strategy"], record["reason"], record["model"]) == ("rolling", "test", "fake")
    usage = record["usage"]
    assert usage is not None and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert [e["event"] for e in events] == ["summarization_started", "summarization_completed"]
    assert events[0]["turns"] == 6 and events[0]["chunks"] == 1
    assert events[1]["summary_id"] == record["id"] and events[1]["tokens_after"] == record["tokens_after"]


def test_a_fold_counts_the_previous_summary_in_its_before_size() -> None:
    prev = summary(f"Counters live in {ENTITY}.", through=4, depth=1, ident="p")
    turns = [make_turn(i) for i in (4, 6)]
    plan = Plan(fold=prev, turns=turns, through=7, depth=2, parent_id="p")
    record = summarize_with(FakeChatModel(), job(plan))
    assert record["tokens_before"] == turns[0]["tokens"] + turns[1]["tokens"] + prev["tokens_after"]
    assert record["chars_before"] == len(turns[0]["content"]) + len(turns[1]["content"]) + len(prev["text"])
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
    per_chunk = SMALL.recent // cost  # 432 // 126 = 3
    expected_calls = -(-len(turns) // per_chunk)  # 4
    assert (per_chunk, expected_calls) == (3, 4)
    prev = summary(f"Counters live in {ENTITY}.", through=3, ident="p")
    prev["facets"]["domain_entities"] = [ENTITY]
    model = RecordingModel(words=40)
    record = summarize_with(model, job(Plan(fold=prev, turns=turns, through=15, depth=1, parent_id="p"),
                                  budget=SMALL, max_output_tokens=256))
    assert record["status"] == "ok"
    assert record["calls"] == expected_calls == model.calls == len(model.prompts) > 1
    assert record["through"] == 15
    for system, user in model.prompts:
        assert count_messages(system, user) <= SMALL.total
    for t in turns:
        assert any(t["content"] in user for _, user in model.prompts), f"turn {t['seq']} was never read"
    assert ENTITY in model.prompts[0][1], "the previous summary is folded into the first chunk"
    assert ENTITY in record["facets"]["domain_entities"]


def test_every_chunk_is_read_whole_even_with_long_agent_ids_and_a_long_summary_prompt() -> None:
    """ENGINE BUG (memory/budget.py turn_cost, memory/summarizer.py _call): chunks are packed by turn_cost, which
    under-counts the headings of long agent ids (config ids are free text); a chunk then overflows its view, the
    view silently leaves turns out, and the record still claims to cover them."""
    a, b = "principal_platform_architect_emea_region", "site_reliability_engineer_oncall_emea_region"
    turns = [make_turn(i, kind="critique", speaker=b, target=a, content=f"Point {i}: quotas.", round_no=100 + i)
             for i in range(60)]
    model = RecordingModel(words=40)
    plan = Plan(fold=summary("s " * 3000, through=0, ident="p"), turns=turns, through=60, depth=1, parent_id="p")
    base = job(plan, budget=SMALL, max_output_tokens=256)
    long_prompt = replace(  # a custom summaryPromptPath fills its half of the system slice
        base, system_prompt=lambda length: "Summarize carefully. " * 300,
        instruction="Summarize the history above, and fold the previous summary into the new one. "
                    "Fill every field you can; use empty lists where there is nothing to say.",
    )
    record = summarize_with(model, long_prompt)
    assert record["status"] == "ok" and record["through"] == 60
    never_read = [t["seq"] for t in turns if not any(t["content"] in user for _, user in model.prompts)]
    assert never_read == [], f"covered through 60 but never shown to the model: {never_read}"


def test_a_transport_failure_gives_a_failed_record_covering_what_was_covered() -> None:
    prev = summary("before", through=5, ident="p")
    plan = Plan(fold=prev, turns=[make_turn(i) for i in range(5, 10)], through=10, depth=1, parent_id="p")
    events: list[dict[str, Any]] = []
    model = FakeChatModel(fail="transport")
    record = summarize_with(model, job(plan), emit=events.append)
    assert record["status"] == "failed" and "ConnectionError" in (record["error"] or "")
    # the failed request is recorded (one call) and charged nothing: no usage came back
    assert record["through"] == 5 and record["text"] == "" and record["calls"] == 1 and record["usage"] is None
    assert [a["outcome"] for a in record["attempts"]] == ["failed"]
    assert [e["event"] for e in events] == ["summarization_started", "summarization_error"]
    first = summarize_with(FakeChatModel(fail="transport"), job(first_plan([make_turn(i) for i in range(4)])))
    assert first["status"] == "failed" and first["through"] == 0


def test_a_failure_in_a_later_chunk_claims_no_coverage_at_all() -> None:
    turns = [make_turn(i, content=marked(i, 30)) for i in range(12)]
    prev = summary("before", through=0, ident="p")
    model = RecordingModel(words=40, fail_on_call=2)
    record = summarize_with(model, job(Plan(fold=prev, turns=turns, through=12, depth=1, parent_id="p"),
                                  budget=SMALL, max_output_tokens=256))
    assert len(model.prompts) == 2
    assert record["status"] == "failed" and record["through"] == 0 and "call 2" in (record["error"] or "")


def test_invalid_structured_output_is_retried_once_in_prose() -> None:
    prev = summary("before", through=3, ident="p")
    prev["facets"]["domain_entities"] = [ENTITY]
    model = FakeChatModel(fail="invalid", words=20)
    plan = Plan(fold=prev, turns=[make_turn(i) for i in range(3, 8)], through=8, depth=1, parent_id="p")
    record = summarize_with(model, job(plan))
    assert model.calls == 2 and record["calls"] == 2
    assert record["status"] == "ok" and record["structured"] is False and record["through"] == 8
    assert record["narrative"] and ENTITY in record["facets"]["domain_entities"]  # the fold's facets carried by code


def test_invalid_structured_output_with_no_retry_left_fails_and_counts_the_attempt() -> None:
    model = FakeChatModel(fail="invalid")
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)]), retries=0))
    assert record["status"] == "failed" and model.calls == 1 and "invalid summary output" in (record["error"] or "")
    assert record["through"] == 0 and record["calls"] == 1


def test_a_reply_cut_at_the_output_limit_is_retried_once_shorter_then_failed() -> None:
    lengths: list[int] = []
    model = CutModel(cut=99)
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)]), max_output_tokens=512,
                                  lengths=lengths))
    assert model.calls == 2
    assert lengths == [1280, 640]  # min(2500, 512 * 2.5), then half of it
    assert record["status"] == "failed" and record["through"] == 0 and record["calls"] == 2
    assert "output limit" in (record["error"] or "")


def test_a_reply_cut_once_succeeds_on_the_shorter_retry() -> None:
    model = CutModel(cut=1)
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)])))
    assert model.calls == 2 and record["calls"] == 2
    assert record["status"] == "ok" and record["structured"] is False and record["through"] == 5
    assert record["text"] == "They chose a token bucket."


def test_target_length_is_what_the_settings_and_the_output_limit_allow() -> None:
    plan = first_plan([make_turn(0)])
    assert target_length(job(plan, max_length=2500, max_output_tokens=512)) == 1280
    assert target_length(job(plan, max_length=900, max_output_tokens=4096)) == 900
    assert target_length(job(plan, max_length=2500, max_output_tokens=16)) == 200


def test_facets_of_the_previous_summary_survive_a_forgetful_model() -> None:
    prev = summary(f"Entities: {ENTITY}\n\nQuotas per tenant.", through=4, ident="p")
    prev["facets"]["domain_entities"] = [ENTITY]
    prev["narrative"] = "Quotas per tenant."
    turns = [make_turn(i, content="Later talk about something else entirely.") for i in range(4, 9)]
    second = summarize_with(DroppingModel(), job(Plan(fold=prev, turns=turns, through=9, depth=1, parent_id="p")))
    assert second["status"] == "ok"
    assert ENTITY in second["facets"]["domain_entities"] and ENTITY in second["text"]
    third = summarize_with(DroppingModel(), job(Plan(fold=second, turns=[make_turn(9)], through=10, depth=2,
                                               parent_id=second["id"])))
    assert ENTITY in third["facets"]["domain_entities"] and ENTITY in third["text"]


def test_an_early_identifier_survives_the_chain_from_the_turn_itself() -> None:
    early = [make_turn(0, content=f"Store counters in redis_cluster_v7 for {ENTITY}."), make_turn(1), make_turn(2)]
    first = summarize_with(FakeChatModel(), job(first_plan(early)))
    assert ENTITY in first["facets"]["domain_entities"]
    later = [make_turn(i, content="Later talk about something else entirely.") for i in range(3, 9)]
    second = summarize_with(DroppingModel(), job(Plan(fold=first, turns=later, through=9, depth=1,
                                                 parent_id=first["id"])))
    assert ENTITY in second["text"] and "redis_cluster_v7" in second["text"]


def test_max_length_is_enforced_at_a_boundary() -> None:
    record = summarize_with(FakeChatModel(words=900), job(first_plan([make_turn(i) for i in range(10)]), max_length=400))
    assert 0 < len(record["text"]) <= 400
    full = render_summary(record["narrative"], record["facets"], 100_000)
    assert set(record["text"].split()) <= set(full.split()) | {"…"}, "no word was cut in half"


def test_a_model_without_structured_output_writes_plain_text() -> None:
    model = FakeChatModel(structured=False, words=30)
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)])))
    assert record["status"] == "ok" and record["structured"] is False and record["text"]
    assert record["facets"] == empty_facets()


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
