"""A summary's prompt is its agent's own prompt: what it claims to cover is shown, and its reserve holds it.

The summarizer runs on the fake model through the real call road; the prompts are those the model received.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from debate_engine.calls.spend import PROMPT_MARGIN
from debate_engine.memory import count_messages, make_budget
from debate_engine.memory.strategies import Plan
from debate_engine.memory.summary_prompt import chunks, room
from debate_engine.nodes.summaries import SummaryCall
from tests.conftest import make_turn
from tests.support.summaries import profile, summarize_with
from tests.support.summary_jobs import RecordingModel, job
from tests.test_budget import summary


def clarification(i: int, words: int) -> dict:
    return make_turn(
        i,
        kind="clarification",
        speaker="user",
        round_no=0,
        content=f"Clarified fact_{i}_marker. "
        + f"The quota service limits tenant_{i} requests. " * words,
    )


def test_a_clarification_longer_than_a_chunk_is_summarized_from_a_prompt_that_shows_it() -> None:
    """Each opening clarification the summary covers is in the prompt that reads it, however long they are."""
    pinned = tuple(clarification(i, 300) for i in range(3))
    turns = [*pinned, *(make_turn(3 + i) for i in range(3))]
    base = job(
        Plan(fold=None, turns=turns, through=6, depth=0, parent_id=None),
        budget=make_budget(8192, 1024),
    )
    the_job = replace(
        base,
        pinned=pinned,
        problem="Design a rate limiter for a public API.",
        system="You are the software architect. " * 20,
    )
    assert len(chunks(turns, room(the_job))) > 1  # the clarifications do not fit one call
    model = RecordingModel(words=40)
    record = summarize_with(model, the_job)
    assert record["status"] == "ok" and record["through"] == 6
    for i in range(3):
        assert any(f"fact_{i}_marker" in user for _, user in model.prompts), (
            f"clarification {i} never shown"
        )
    assert all(user.startswith("## Problem\nDesign a rate limiter") for _, user in model.prompts)


@settings(max_examples=40, deadline=None)
@given(
    out=st.sampled_from([64, 256, 1024]),
    window=st.sampled_from([512, 1024, 4096]),
    sizes=st.lists(st.sampled_from([3, 20, 80, 300]), min_size=1, max_size=12),
    fold=st.sampled_from([0, 200, 3000]),
)
def test_a_summarys_reserve_holds_every_prompt_it_sends(
    out: int, window: int, sizes: list[int], fold: int
) -> None:
    """Chunks after the first carry an interim summary: the spend cap's reserve must count it too."""
    turns = [
        make_turn(i, content="Token buckets in rate_limiter.py. " * (n // 5 + 1))
        for i, n in enumerate(sizes)
    ]
    previous = (
        summary("Folded narrative. " * (fold // 2 + 1), through=0, ident="p") if fold else None
    )
    the_job = job(
        Plan(
            fold=previous,
            turns=turns,
            through=len(turns),
            depth=1 if previous else 0,
            parent_id="p" if previous else None,
        ),
        budget=make_budget(window + out, out),
        max_output_tokens=out,
        retries=0,
    )
    reserved = [
        r[1] for r in SummaryCall(agent=profile(max_output_tokens=out), job=the_job).reserve()
    ]
    model = RecordingModel(words=60)
    summarize_with(model, the_job)
    sent = [count_messages(system, user) for system, user in model.prompts]
    assert len(sent) <= len(reserved)
    assert all(
        tokens * PROMPT_MARGIN <= limit for tokens, limit in zip(sent, reserved, strict=False)
    )
