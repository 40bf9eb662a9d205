"""Summarizer failures that lose nothing: a failed call claims no coverage, a bad reply is retried once."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from debate_engine.memory.strategies import Plan
from debate_engine.memory.summary_prompt import target_length
from debate_engine.providers.fake import FakeChatModel
from tests.conftest import make_turn
from tests.support.summaries import summarize_with
from tests.support.summary_jobs import ENTITY, SMALL, RecordingModel, first_plan, job
from tests.test_budget import marked, summary


class CutModel(BaseChatModel):
    """Plain text only; the first ``cut`` replies stop at the output limit (finish_reason "length")."""

    cut: int = 1
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "cut"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls += 1
        reason = "length" if self.calls <= self.cut else "stop"
        message = AIMessage(
            "They chose a token bucket.", response_metadata={"finish_reason": reason}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_a_transport_failure_gives_a_failed_record_covering_what_was_covered() -> None:
    prev = summary("before", through=5, ident="p")
    plan = Plan(
        fold=prev, turns=[make_turn(i) for i in range(5, 10)], through=10, depth=1, parent_id="p"
    )
    events: list[dict[str, Any]] = []
    model = FakeChatModel(fail="transport")
    record = summarize_with(model, job(plan), emit=events.append)
    assert record["status"] == "failed" and "ConnectionError" in (record["error"] or "")
    # the failed request is recorded (one call) and charged nothing: no usage came back
    assert (
        record["through"] == 5
        and record["text"] == ""
        and record["calls"] == 1
        and record["usage"] is None
    )
    assert [a["outcome"] for a in record["attempts"]] == ["failed"]
    assert [e["event"] for e in events] == ["summarization_started", "summarization_error"]
    first = summarize_with(
        FakeChatModel(fail="transport"), job(first_plan([make_turn(i) for i in range(4)]))
    )
    assert first["status"] == "failed" and first["through"] == 0


def test_a_failure_in_a_later_chunk_claims_no_coverage_at_all() -> None:
    turns = [make_turn(i, content=marked(i, 30)) for i in range(12)]
    prev = summary("before", through=0, ident="p")
    model = RecordingModel(words=40, fail_on_call=2)
    record = summarize_with(
        model,
        job(
            Plan(fold=prev, turns=turns, through=12, depth=1, parent_id="p"),
            budget=SMALL,
            max_output_tokens=256,
        ),
    )
    assert len(model.prompts) == 2
    assert (
        record["status"] == "failed"
        and record["through"] == 0
        and "call 2" in (record["error"] or "")
    )


def test_invalid_structured_output_is_retried_once_in_prose() -> None:
    prev = summary("before", through=3, ident="p")
    prev["facets"]["domain_entities"] = [ENTITY]
    model = FakeChatModel(fail="invalid", words=20)
    plan = Plan(
        fold=prev, turns=[make_turn(i) for i in range(3, 8)], through=8, depth=1, parent_id="p"
    )
    record = summarize_with(model, job(plan))
    assert model.calls == 2 and record["calls"] == 2
    assert record["status"] == "ok" and record["structured"] is False and record["through"] == 8
    assert (
        record["narrative"] and ENTITY in record["facets"]["domain_entities"]
    )  # the fold's facets carried by code


def test_invalid_structured_output_with_no_retry_left_fails_and_counts_the_attempt() -> None:
    model = FakeChatModel(fail="invalid")
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)]), retries=0))
    assert (
        record["status"] == "failed"
        and model.calls == 1
        and "invalid summary output" in (record["error"] or "")
    )
    assert record["through"] == 0 and record["calls"] == 1


def test_a_reply_cut_at_the_output_limit_is_retried_once_shorter_then_failed() -> None:
    lengths: list[int] = []
    model = CutModel(cut=99)
    record = summarize_with(
        model,
        job(first_plan([make_turn(i) for i in range(5)]), max_output_tokens=512, lengths=lengths),
    )
    assert model.calls == 2
    # min(2500, 512 * 2.5), then half of it (the first asked when sizing the chunks, with the first prompt's text)
    assert lengths == [1280, 1280, 640]
    assert record["status"] == "failed" and record["through"] == 0 and record["calls"] == 2
    assert "output limit" in (record["error"] or "")


def test_a_reply_cut_once_succeeds_on_the_shorter_retry() -> None:
    model = CutModel(cut=1)
    record = summarize_with(model, job(first_plan([make_turn(i) for i in range(5)])))
    assert model.calls == 2 and record["calls"] == 2
    assert record["status"] == "ok" and record["structured"] is False and record["through"] == 5
    assert record["narrative"] == "They chose a token bucket."
    assert (
        record["text"] == "Identifiers: rate_limiter.py\n\nThey chose a token bucket."
    )  # lifted by code


def test_target_length_is_what_the_settings_and_the_output_limit_allow() -> None:
    plan = first_plan([make_turn(0)])
    assert target_length(job(plan, max_length=2500, max_output_tokens=512)) == 1280
    assert target_length(job(plan, max_length=900, max_output_tokens=4096)) == 900
    assert target_length(job(plan, max_length=2500, max_output_tokens=16)) == 200
