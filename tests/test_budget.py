"""The working context never exceeds its budget, whatever the debate."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debate_engine.memory import build_view, count_messages, make_budget
from debate_engine.memory.facets import empty_facets
from debate_engine.memory.records import SummaryRecord
from tests.conftest import make_turn


def summary(text: str) -> SummaryRecord:
    from debate_engine.memory import count_tokens

    return SummaryRecord(
        id="s1",
        agent_id="architect",
        role="architect",
        round=2,
        depth=0,
        parent_id=None,
        status="ok",
        text=text,
        narrative=text,
        facets=empty_facets(),
        covered_turn_ids=[],
        chars_before=0,
        chars_after=len(text),
        tokens_before=0,
        tokens_after=count_tokens(text),
        strategy="rolling",
        reason="test",
        structured=True,
        error=None,
        latency_ms=0,
        usage=None,
        model="fake",
        temperature=0.2,
        provider="fake",
        created_at=0.0,
    )


def test_split_scales_the_seed_shares_to_the_window() -> None:
    budget = make_budget(9216, 1024)
    assert budget.total == 8192
    assert (budget.system, budget.summary, budget.recent) == (2048, 1024, 5120)


def test_a_window_smaller_than_the_output_reserve_is_an_error() -> None:
    with pytest.raises(ValueError, match="lower max output tokens"):
        make_budget(1000, 1000)


def test_newest_turns_are_kept_and_the_view_is_recorded() -> None:
    turns = [make_turn(i) for i in range(40)]
    view = build_view(
        system_prompt="You are an architect.", task="Refine.", summary=None, turns=turns, budget=make_budget(2048, 512)
    )
    assert view.record["turn_ids"], "some history fits"
    assert view.record["turn_ids"][-1] == "t39"
    assert view.record["turn_ids"] == [f"t{i}" for i in range(40 - len(view.record["turn_ids"]), 40)]
    assert view.record["prompt_tokens"] == count_messages(view.system, view.user) <= 1536


def test_one_huge_message_is_shortened_visibly() -> None:
    huge = make_turn(1, content="word " * 20000)
    view = build_view(system_prompt="sys", task="task", summary=None, turns=[huge], budget=make_budget(4096, 512))
    assert view.record["shortened"] is True
    assert "tokens shortened" in view.user
    assert view.record["prompt_tokens"] <= 3584


def test_a_long_task_is_shortened_not_overflowed() -> None:
    view = build_view(
        system_prompt="sys", task="critique this " * 5000, summary=None, turns=[], budget=make_budget(2048, 256)
    )
    assert view.record["shortened"]
    assert view.record["prompt_tokens"] <= 1792


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    window=st.integers(min_value=600, max_value=16000),
    output=st.integers(min_value=16, max_value=500),
    sizes=st.lists(st.integers(min_value=0, max_value=3000), max_size=30),
    task_words=st.integers(min_value=0, max_value=4000),
    summary_words=st.integers(min_value=0, max_value=2000),
    system_words=st.integers(min_value=1, max_value=3000),
)
def test_no_view_ever_exceeds_its_budget(window, output, sizes, task_words, summary_words, system_words) -> None:
    budget = make_budget(window, output)
    turns = [make_turn(i, content="lorem ipsum dolor " * n) for i, n in enumerate(sizes)]
    view = build_view(
        system_prompt="role " * system_words,
        task="do the task " * task_words,
        summary=summary("summary text " * summary_words) if summary_words else None,
        turns=turns,
        budget=budget,
    )
    assert count_messages(view.system, view.user) <= budget.total
    assert view.record["prompt_tokens"] <= budget.total
    assert set(view.record["turn_ids"]) <= {t["id"] for t in turns}
