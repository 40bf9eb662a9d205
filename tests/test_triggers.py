"""Summary triggers and guards: each fires exactly at its boundary; overflow overrides every guard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from debate_engine.memory import SummarizationSettings, should_summarize
from debate_engine.memory.budget import BudgetSplit, make_budget
from debate_engine.memory.triggers import Live, decide, measure
from tests.conftest import make_turn
from tests.test_budget import summary

BUDGET = make_budget(2560, 512)
# total 2048: system 512, summary 256, recent min(1280, 2048 - 512 - 256 - 48) = 1232; history 256 + 1232 = 1488
RECENT, HISTORY = 1232, 1488
# Every trigger off, no guards: each test turns on what it tests.
OFF = SummarizationSettings(
    threshold=0,
    token_limit=0,
    trigger_ratio=2.0,
    reset_ratio=0.5,
    every_n_turns=0,
    min_turns=1,
    cooldown_turns=0,
)


def off(**changes) -> SummarizationSettings:
    return OFF.model_copy(update=changes)


def live(turns: int = 3, tokens: int = 100, chars: int = 100) -> Live:
    return Live(turns=turns, tokens=tokens, chars=chars)


def test_the_budget_these_tests_assume() -> None:
    assert (BUDGET.recent, BUDGET.history) == (RECENT, HISTORY)


def test_nothing_fires_with_every_trigger_off() -> None:
    decision = decide(live(turns=50, tokens=RECENT, chars=100_000), None, OFF, BUDGET)
    assert not decision.fire and decision.reason == "below every trigger"


# --- each trigger at its boundary ------------------------------------------------------------------------------


def test_chars_threshold_fires_at_the_threshold_not_one_below() -> None:
    s = off(threshold=500)
    assert not decide(live(chars=499), None, s, BUDGET).fire
    decision = decide(live(chars=500), None, s, BUDGET)
    assert decision.fire and decision.reason == "chars 500 >= 500"


def test_chars_threshold_counts_the_summary_text() -> None:
    s = off(threshold=500)
    prev = summary("x" * 120, through=5)
    assert not decide(live(chars=500 - 120 - 1), prev, s, BUDGET).fire
    assert decide(live(chars=500 - 120), prev, s, BUDGET).reason == "chars 500 >= 500"


def test_token_limit_fires_at_the_limit_not_one_below() -> None:
    s = off(token_limit=700)
    assert not decide(live(tokens=699), None, s, BUDGET).fire
    decision = decide(live(tokens=700), None, s, BUDGET)
    assert decision.fire and decision.reason == "tokens 700 >= 700" and decision.live_tokens == 700


def test_token_limit_counts_the_summary_tokens() -> None:
    s = off(token_limit=700)
    prev = summary("word", through=5, tokens_after=200)
    assert not decide(live(tokens=499), prev, s, BUDGET).fire
    decision = decide(live(tokens=500), prev, s, BUDGET)
    assert decision.fire and decision.live_tokens == 700


def test_ratio_fires_at_its_share_of_the_history_budget_not_one_token_below() -> None:
    s = off(trigger_ratio=0.5, reset_ratio=0.5)
    at = HISTORY // 2  # 744 tokens is exactly 0.50 of 1488
    below = decide(live(tokens=at - 1), None, s, BUDGET)
    assert not below.fire and below.ratio == (at - 1) / HISTORY
    decision = decide(live(tokens=at), None, s, BUDGET)
    assert decision.fire and decision.ratio == 0.5 and decision.reason == "token_ratio 0.50 >= 0.50"


def test_ratio_at_the_default_080() -> None:
    s = off(trigger_ratio=0.8, reset_ratio=0.7)
    first = -(-HISTORY * 8 // 10)  # ceil(0.8 * 1488) = ceil(1190.4) = 1191
    assert first == 1191 and first <= RECENT
    assert not decide(live(tokens=first - 1), None, s, BUDGET).fire
    assert decide(live(tokens=first), None, s, BUDGET).fire


def test_every_n_turns_fires_at_n_not_n_minus_one() -> None:
    s = off(every_n_turns=5)
    assert not decide(live(turns=4), None, s, BUDGET).fire
    decision = decide(live(turns=5), None, s, BUDGET)
    assert decision.fire and decision.reason == "turns 5 >= 5"


def test_triggers_are_or_combined_and_all_named() -> None:
    s = off(threshold=10, token_limit=10, every_n_turns=2)
    decision = decide(live(turns=2, tokens=10, chars=10), None, s, BUDGET)
    assert decision.fire and decision.reason == "chars 10 >= 10; tokens 10 >= 10; turns 2 >= 2"


# --- guards --------------------------------------------------------------------------------------------------


def test_min_messages_holds_a_trigger_back_until_enough_new_turns() -> None:
    s = off(token_limit=100, min_turns=3)
    held = decide(live(turns=2, tokens=100), None, s, BUDGET)
    assert not held.fire and "only 2 new turns (< 3)" in held.reason
    assert decide(live(turns=3, tokens=100), None, s, BUDGET).fire


WIDE = make_budget(2560, 512, BudgetSplit(system=1 / 8, summary=6 / 8, recent=1 / 8))
# total 2048: system 256, summary 1536, recent min(256, 2048 - 256 - 1536 - 48) = 208; history 1744
WIDE_HISTORY = 1744


def test_cooldown_holds_until_enough_turns_since_the_last_summary() -> None:
    s = off(token_limit=100, cooldown_turns=4, reset_ratio=0.5, trigger_ratio=0.5)
    heavy = summary(
        "word", through=9, tokens_after=WIDE_HISTORY // 2
    )  # usage 0.50, not below the 0.50 reset
    held = decide(live(turns=3, tokens=100), heavy, s, WIDE)
    assert not held.fire and "cooldown" in held.reason
    assert decide(live(turns=4, tokens=100), heavy, s, WIDE).fire


def test_a_summary_counts_whole_and_takes_its_excess_from_the_verbatim_turns() -> None:
    """Views show a summary whole: the ratio counts all of it, and one longer than its 256-token share leaves
    the uncovered turns that much less room before the overflow rule fires."""
    long = summary("word", through=9, tokens_after=756)  # 500 over its share
    decision = decide(live(turns=3, tokens=100), long, off(trigger_ratio=2.0), BUDGET)
    assert decision.live_tokens == 100 + 756 and not decision.fire
    assert not decide(live(turns=3, tokens=RECENT - 500), long, OFF, BUDGET).fire
    overflow = decide(live(turns=3, tokens=RECENT - 499), long, OFF, BUDGET)
    assert overflow.fire and f"recent budget {RECENT - 500}" in overflow.reason


def test_cooldown_does_not_apply_before_the_first_summary() -> None:
    s = off(token_limit=100, cooldown_turns=4)
    assert decide(live(turns=1, tokens=100), None, s, BUDGET).fire


def test_a_summary_below_the_reset_ratio_rearms_inside_the_cooldown() -> None:
    s = off(token_limit=100, cooldown_turns=4, reset_ratio=0.5, trigger_ratio=0.5)
    light = summary("word", through=9, tokens_after=HISTORY // 2 - 1)  # 743 / 1488 < 0.50
    assert decide(live(turns=1, tokens=100), light, s, BUDGET).fire


def test_a_burst_over_the_ratio_after_a_heavy_summary_waits_for_the_cooldown() -> None:
    s = SummarizationSettings(threshold=0, min_turns=2, cooldown_turns=4)  # ratio 0.8, reset 0.7
    heavy = summary("word", through=9, tokens_after=int(WIDE_HISTORY * 0.75))
    burst = live(turns=2, tokens=200)
    decision = decide(burst, heavy, s, WIDE)
    assert decision.ratio >= 0.8 and not decision.fire and "cooldown" in decision.reason


# --- overflow and disabled ---------------------------------------------------------------------------------------


def test_overflow_fires_one_token_over_the_recent_slice_despite_every_guard() -> None:
    s = off(min_turns=5, cooldown_turns=10)
    heavy = summary(
        "word", through=9, tokens_after=HISTORY
    )  # never re-armed; shown in its whole room
    room = RECENT - RECENT // 2  # the half of the turns' share a summary's room may take
    assert not decide(live(turns=1, tokens=room), heavy, s, BUDGET).fire
    decision = decide(live(turns=1, tokens=room + 1), heavy, s, BUDGET)
    assert decision.fire
    assert decision.reason == f"overflow: {room + 1} uncovered tokens > recent budget {room}"


def test_overflow_needs_a_turn_to_fold() -> None:
    assert not decide(live(turns=0, tokens=RECENT + 1), None, OFF, BUDGET).fire


@pytest.mark.parametrize("tokens", [0, RECENT + 1, 10 * RECENT])
def test_disabled_never_fires(tokens: int) -> None:
    s = SummarizationSettings(
        enabled=False, threshold=1, token_limit=1, every_n_turns=1, min_turns=1
    )
    decision = decide(
        live(turns=100, tokens=tokens, chars=10**6), summary("w", through=1), s, BUDGET
    )
    assert not decision.fire and decision.reason == "disabled"


def test_should_summarize_when_disabled_never_fires_on_a_huge_transcript() -> None:
    transcript = [make_turn(i, content="tok " * 600) for i in range(20)]
    decision = should_summarize(
        transcript, "architect", None, SummarizationSettings(enabled=False), BUDGET
    )
    assert not decision.fire and decision.reason == "disabled"


# --- measure and should_summarize ---------------------------------------------------------------------------


def perspective_transcript():
    """Return a three-agent transcript; the comments mark what ``architect`` sees."""
    return [
        make_turn(
            0, kind="briefing", speaker="moderator", content="Briefing on quota_service."
        ),  # seen
        make_turn(1, speaker="architect", content="Architect proposes buckets."),  # seen
        make_turn(2, speaker="security", content="Security proposes mTLS."),
        make_turn(
            3, kind="critique", speaker="security", target="architect", content="Buckets leak."
        ),  # seen
        make_turn(
            4, kind="critique", speaker="architect", target="security", content="mTLS is heavy."
        ),
        make_turn(
            5, kind="critique", speaker="performance", target="security", content="Slow handshakes."
        ),
        make_turn(
            6, kind="refinement", speaker="architect", content="Leaky bucket per tenant."
        ),  # seen
        make_turn(7, kind="refinement", speaker="security", content="mTLS at the edge."),
        make_turn(8, kind="synthesis", speaker="judge", content="Final answer."),
    ]


def test_measure_counts_turn_costs_and_characters() -> None:
    turns = [make_turn(i, content=" ".join(["word"] * (10 * i))) for i in range(1, 5)]
    assert [t["tokens"] for t in turns] == [10, 20, 30, 40]  # "word word ..." is one token a word
    got = measure(reversed(turns), SummarizationSettings(), BUDGET)
    expected_chars = sum(5 * 10 * i - 1 for i in range(1, 5))  # n words: 4n letters, n - 1 spaces
    assert (got.turns, got.tokens, got.chars, got.saturated) == (
        4,
        100 + 4 * 24,
        expected_chars,
        False,
    )


def test_measure_stops_reading_once_every_trigger_has_fired() -> None:
    settings_ = SummarizationSettings(threshold=100, every_n_turns=3, cooldown_turns=2, min_turns=2)
    read: list[int] = []

    def tail():
        for i in range(100, 0, -1):
            read.append(i)
            yield make_turn(i, content="tok " * 700)

    got = measure(tail(), settings_, BUDGET)
    assert got.saturated and got.tokens > BUDGET.history
    assert len(read) == got.turns < 100


def test_should_summarize_counts_only_the_viewers_uncovered_turns() -> None:
    transcript = perspective_transcript()
    seen = [transcript[i] for i in (0, 1, 3, 6)]
    s = off(token_limit=1)
    decision = should_summarize(transcript, "architect", None, s, BUDGET)
    assert decision.live_tokens == sum(t["tokens"] + 24 for t in seen)
    prev = summary("summary", through=4, tokens_after=30)
    decision = should_summarize(transcript, "architect", prev, s, BUDGET)
    assert decision.live_tokens == transcript[6]["tokens"] + 24 + 30


def test_the_judge_sees_everything_but_the_synthesis() -> None:
    transcript = perspective_transcript()
    decision = should_summarize(transcript, "judge", None, off(token_limit=1), BUDGET)
    assert decision.live_tokens == sum(t["tokens"] + 24 for t in transcript[:8])


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=900), max_size=40),
    threshold=st.integers(min_value=0, max_value=20_000),
    token_limit=st.integers(min_value=0, max_value=3000),
    every=st.integers(min_value=0, max_value=10),
    min_turns=st.integers(min_value=1, max_value=6),
    cooldown=st.integers(min_value=0, max_value=8),
    summary_tokens=st.one_of(st.none(), st.integers(min_value=0, max_value=1600)),
)
def test_measuring_stops_early_only_when_the_decision_cannot_change(
    sizes, threshold, token_limit, every, min_turns, cooldown, summary_tokens
) -> None:
    s = SummarizationSettings(
        threshold=threshold,
        token_limit=token_limit,
        every_n_turns=every,
        min_turns=min_turns,
        cooldown_turns=cooldown,
    )
    turns = [make_turn(i, content="tok " * n) for i, n in enumerate(sizes)]
    prev = (
        None if summary_tokens is None else summary("prior", through=0, tokens_after=summary_tokens)
    )
    full = Live(
        turns=len(turns),
        tokens=sum(t["tokens"] + 24 for t in turns),
        chars=sum(len(t["content"]) for t in turns),
    )
    measured = measure(reversed(turns), s, BUDGET)
    if not measured.saturated:
        assert (measured.turns, measured.tokens, measured.chars) == (
            full.turns,
            full.tokens,
            full.chars,
        )
    assert decide(measured, prev, s, BUDGET).fire == decide(full, prev, s, BUDGET).fire
    if full.tokens > RECENT and full.turns:
        assert decide(full, prev, s, BUDGET).fire, "overflow always fires"


# --- settings ------------------------------------------------------------------------------------------------


def test_agent_settings_merge_field_by_field() -> None:
    debate = SummarizationSettings.model_validate(
        {"threshold": 5000, "maxLength": 2500, "method": "length-based"}
    )
    agent = debate.merged({"threshold": 8000, "everyNTurns": 6})
    assert (agent.threshold, agent.max_length, agent.method, agent.every_n_turns) == (
        8000,
        2500,
        "fresh",
        6,
    )


def test_seed_aliases_load() -> None:
    s = SummarizationSettings.model_validate(
        {
            "tokenLimit": 900,
            "triggerTokenRatio": 0.6,
            "resetTokenRatio": 0.4,
            "minMessages": 3,
            "cooldownMessages": 5,
            "maxSummaryChainDepth": 2,
        }
    )
    assert (
        s.token_limit,
        s.trigger_ratio,
        s.reset_ratio,
        s.min_turns,
        s.cooldown_turns,
        s.max_depth,
    ) == (900, 0.6, 0.4, 3, 5, 2)


def test_a_reset_ratio_above_the_trigger_ratio_is_rejected() -> None:
    with pytest.raises(ValueError, match="resetTokenRatio"):
        SummarizationSettings(trigger_ratio=0.6, reset_ratio=0.7)
    with pytest.raises(ValueError, match="not a strategy"):
        SummarizationSettings(method="magic")
