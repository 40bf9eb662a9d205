"""Summary triggers and guards: the seed plan's cases as plain-function tests."""

from __future__ import annotations

from debate_engine.memory import SummarizationSettings, decide, make_budget
from tests.conftest import make_turn
from tests.test_budget import summary

BUDGET = make_budget(2048 + 512, 512)  # history budget: summary + recent = 1536 tokens
SETTINGS = SummarizationSettings(threshold=0, min_turns=2, cooldown_turns=4)


def turns_of(tokens_each: int, count: int, start: int = 0):
    return [make_turn(start + i, content="tok " * tokens_each) for i in range(count)]


def test_fires_exactly_when_usage_crosses_the_ratio() -> None:
    history = BUDGET.history
    below = turns_of(int(history * 0.78 / 4), 4)
    above = turns_of(int(history * 0.82 / 4), 4)
    assert not decide(below, None, SETTINGS, history).fire
    decision = decide(above, None, SETTINGS, history)
    assert decision.fire and "token_ratio" in decision.reason


def test_a_burst_crossing_the_threshold_gives_one_summary() -> None:
    burst = turns_of(int(BUDGET.history * 0.9 / 5), 5)
    first = decide(burst, None, SETTINGS, BUDGET.history)
    assert first.fire
    # Once summarized, the same burst is covered: the next check sees only the summary.
    after = summary("short summary " * 10)
    assert not decide([], after, SETTINGS, BUDGET.history).fire


def test_hysteresis_stops_a_second_summary_after_a_small_burst() -> None:
    history = BUDGET.history
    heavy = summary("word " * int(history * 0.75))  # the summary left usage above the 0.7 reset
    small_burst = turns_of(int(history * 0.04), 2)
    decision = decide(small_burst, heavy, SETTINGS, history)
    assert decision.ratio >= SETTINGS.trigger_ratio
    assert not decision.fire and "cooldown" in decision.reason


def test_rearmed_below_reset_ratio_fires_inside_the_cooldown() -> None:
    history = BUDGET.history
    light = summary("word " * int(history * 0.3))
    burst = turns_of(int(history * 0.3), 2)
    assert decide(burst, light, SETTINGS, history).fire


def test_emergency_ignores_the_cooldown() -> None:
    history = BUDGET.history
    heavy = summary("word " * int(history * 0.75))
    flood = turns_of(int(history * 0.2), 2)
    decision = decide(flood, heavy, SETTINGS, history)
    assert decision.ratio >= 1.0
    assert decision.fire and decision.reason.startswith("emergency")


def test_depth_guard_halts_the_chain() -> None:
    deep = summary("word " * 50)
    deep["depth"] = 3
    decision = decide(turns_of(400, 6), deep, SETTINGS.merged({"maxSummaryChainDepth": 3}), BUDGET.history)
    assert not decision.fire and decision.depth_capped


def test_character_threshold_and_every_n_turns() -> None:
    chars = SummarizationSettings(threshold=500, trigger_ratio=2.0, reset_ratio=0.5)
    assert "chars" in decide(turns_of(50, 3), None, chars, 100_000).reason
    every = SummarizationSettings(threshold=0, trigger_ratio=2.0, reset_ratio=0.5, every_n_turns=5)
    assert not decide(turns_of(1, 4), None, every, 100_000).fire
    assert decide(turns_of(1, 5), None, every, 100_000).fire


def test_minimum_turns_and_disabled() -> None:
    assert not decide(turns_of(2000, 1), None, SETTINGS, BUDGET.history).fire
    assert decide(turns_of(2000, 1), None, SETTINGS.merged({"enabled": False}), 10).reason == "disabled"


def test_agent_settings_merge_field_by_field() -> None:
    debate = SummarizationSettings.model_validate({"threshold": 5000, "maxLength": 2500, "method": "length-based"})
    agent = debate.merged({"threshold": 8000})
    assert (agent.threshold, agent.max_length, agent.method) == (8000, 2500, "fresh")


def test_past_the_depth_cap_the_verbatim_tail_shrinks_but_never_below_two() -> None:
    from debate_engine.memory import verbatim_limit

    capped = summary("word " * 200)
    capped["depth"] = 3
    many = turns_of(300, 10)
    limit = verbatim_limit(many, capped, SETTINGS, BUDGET.history)
    assert limit is not None and 2 <= limit < 10
    assert (
        sum(t["tokens"] for t in many[-limit:]) + capped["tokens_after"] <= SETTINGS.trigger_ratio * BUDGET.history
        or limit == 2
    )
    assert verbatim_limit(turns_of(3000, 5), capped, SETTINGS, BUDGET.history) == 2
    capped["depth"] = 1
    assert verbatim_limit(many, capped, SETTINGS, BUDGET.history) is None


def test_a_2k_context_model_compresses_down_to_the_depth_cap(debate) -> None:
    out = debate(
        rounds=8, agents="architect,security", model="fake:words=150", context_window=2048, max_output_tokens=256
    )
    chain = [r for r in out["summary_log"] if r["agent_id"] == "architect" and r["status"] == "ok"]
    assert [r["depth"] for r in chain] == list(range(len(chain))) and chain[-1]["depth"] == 3
    assert all(r["parent_id"] == p["id"] for p, r in zip(chain, chain[1:], strict=False))
    late = [t for t in out["transcript"] if t["speaker"] == "architect" and t["round"] >= 7 and t["view"]]
    assert late and all(t["view"]["prompt_tokens"] <= t["view"]["budget_tokens"] for t in late)
    assert all(t["view"]["summary_id"] == chain[-1]["id"] for t in late)
