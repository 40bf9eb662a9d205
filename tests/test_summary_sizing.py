"""Summaries sized to their budget: the length asked for fits the output limit, and a cut reply is never stored."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from debate_engine.memory import make_budget
from debate_engine.memory.strategies import Plan
from debate_engine.memory.summary_prompt import CHARS_PER_TOKEN, SummaryJob, target_length
from debate_engine.nodes.summarize import summary_instructions
from tests.conftest import make_turn
from tests.support.fake_replies import wanted_tool
from tests.support.summaries import summarize_with

PROFILE = {"id": "architect", "role": "architect", "summary_prompt": None}


def job(
    max_length: int = 2500, max_output: int = 384, window: int = 4096, turns: int = 6
) -> SummaryJob:
    material = [make_turn(i) for i in range(turns)]
    return SummaryJob(
        agent_id="architect",
        role="architect",
        round=2,
        reason="test",
        strategy="rolling",
        plan=Plan(fold=None, turns=material, through=turns, depth=0, parent_id=None),
        max_length=max_length,
        max_output_tokens=max_output,
        budget=make_budget(window, max_output),
        system="You are the architect.",
        instructions=partial(summary_instructions, PROFILE),
        instruction="Summarize the history above.",
        model_spec="openai:test-model",
    )


# counting tokens of long prompts on a loaded machine outruns hypothesis' 200 ms deadline
@settings(deadline=None)
@given(max_length=st.integers(200, 20_000), max_output=st.integers(16, 4096))
def test_the_length_asked_for_fits_the_output_limit(max_length: int, max_output: int) -> None:
    asked = target_length(job(max_length=max_length, max_output=max_output, window=16_384))
    assert asked <= max_length or asked == 200
    assert asked <= max(200, int(max_output * CHARS_PER_TOKEN))
    assert f"at most {asked} characters" in summary_instructions(
        PROFILE, asked
    )  # the prompt asks for exactly that


def test_the_default_summary_of_a_small_window_is_asked_to_fit() -> None:
    # 384 output tokens hold about 960 characters of JSON-wrapped text: not the 2,500 maxLength
    assert target_length(job(max_length=2500, max_output=384)) == 960


def server_model(server, max_output: int = 384):  # noqa: ANN001, ANN201
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model="test-model",
        base_url=server.base_url,
        api_key="sk-test-sizing",
        max_retries=0,
        max_tokens=max_output,
    )


def test_a_summary_cut_at_the_output_limit_is_retried_shorter_not_stored() -> None:
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(words=30) as server:
        server.faults.append("length")
        record = summarize_with(server_model(server), job())
        bodies = [r["body"] for r in server.requests]
    assert record["status"] == "ok" and record["calls"] == 2 and record["through"] == 6
    first, second = (b["messages"][-1]["content"] for b in bodies)
    assert "at most 960 characters" in first and "at most 480 characters" in second
    # the retry asks for prose: the structured form's JSON is what overflowed the output allowance
    assert wanted_tool(bodies[0]) == "StructuredSummary" and wanted_tool(bodies[1]) is None
    assert record["structured"] is False


def test_a_summary_cut_twice_is_a_failure_that_covers_nothing_new() -> None:
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(words=30) as server:
        server.faults.extend(["length", "length"])
        record = summarize_with(server_model(server), job())
    assert record["status"] == "failed" and "output limit" in (record["error"] or "")
    assert record["through"] == 0 and record["text"] == ""


@pytest.mark.parametrize("max_output", [64, 256, 1024])
def test_the_summary_call_reserves_the_agent_output(max_output: int) -> None:
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(words=10) as server:
        summarize_with(server_model(server, max_output), job(max_output=max_output, window=8192))
        sent = server.requests[-1]["body"]
    assert (sent.get("max_tokens") or sent.get("max_completion_tokens")) == max_output


def test_an_answer_longer_than_its_slot_is_asked_again_shorter_and_kept_whole_when_the_second_fails() -> (
    None
):
    """The shorter second request is counted and charged; when it fails, the first answer stands, never cut."""
    from debate_engine.calls.road import CallFailed
    from debate_engine.memory.strategies import Plan
    from debate_engine.memory.summarizer import summarize
    from tests.conftest import make_turn
    from tests.support.summary_jobs import job

    class Answer:
        def __init__(self, text: str) -> None:
            self.text, self.truncated = text, False
            self.parsed = {
                "narrative": text,
                **{
                    k: []
                    for k in (
                        "key_points",
                        "decisions",
                        "unresolved",
                        "action_items",
                        "participants",
                        "domain_entities",
                    )
                },
            }
            self.attempts = [
                {"model": "fake", "outcome": "ok", "usage": None, "latency_ms": 1, "error": None}
            ]

    turns = [make_turn(i) for i in range(4)]
    the_job = job(Plan(fold=None, turns=turns, through=4, depth=0, parent_id=None))
    steps = summarize(the_job)
    first = next(steps)
    assert first.structured
    verbose = "They chose a token bucket. " * 700  # far past the room a view gives it
    second = steps.send(Answer(verbose))  # asked again, shorter
    assert second.structured and second.user != first.user
    failure = CallFailed(
        "the second request failed",
        [{"model": "fake", "outcome": "failed", "usage": None, "latency_ms": 1, "error": "x"}],
    )
    try:
        steps.throw(failure)
    except StopIteration as done:
        record = done.value
    assert record["status"] == "ok" and record["narrative"] == verbose.strip(), "kept whole"
    assert record["calls"] == 2, (
        "the first answer's request and the failed shorter one are both counted"
    )
