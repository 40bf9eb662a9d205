"""Regression tests from a mutation check (issue 11): the spend cap's arithmetic and the judge's floor.

Every test here failed against a one-line change to the engine that the rest of the suite let through;
each pins one rule with numbers worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from debate_engine.calls.ledger import empty_spend
from debate_engine.calls.spend import charge, judge_floor, worst_case
from debate_engine.config.context import Context
from debate_engine.config.resolve import ConfigError, resolve
from debate_engine.nodes.cap import fits, judge_tools, left_for_judge

# --- the judge's floor ----------------------------------------------------------------------------------------


def judge(window: int, output: int, model: str = "fake") -> Any:
    return {"id": "judge", "model": model, "context_window": window, "max_output_tokens": output}


def test_the_judge_floor_is_its_prompt_up_to_2048_tokens_and_its_whole_answer() -> None:
    assert judge_floor(8192, 1024) == (2048, 1024)  # min(8192 - 1024 = 7168, 2048)
    assert judge_floor(2304, 1024) == (1280, 1024)  # min(2304 - 1024 = 1280, 2048)
    assert judge_floor(1000, 1024) == (0, 1024)  # a bad window is reported elsewhere, never raises


def test_a_token_cap_must_pay_for_the_judges_prompt_floor_and_answer() -> None:
    """Window 8192, output 1024: the judge's share is 2048 + 1024 = 3072 tokens; 3071 is refused, 3072 is not."""
    context = Context(model="fake", context_window=8192, max_output_tokens=1024)
    assert resolve(Context(**{**context.__dict__, "max_tokens": 3072}))["cap"]["max_tokens"] == 3072
    with pytest.raises(ConfigError) as caught:
        resolve(Context(**{**context.__dict__, "max_tokens": 3071}))
    assert caught.value.problems == [
        "max_tokens: 3071 cannot pay for the judge's synthesis alone (3072 tokens); raise the cap"
    ]
    with pytest.raises(ConfigError):  # more than the prompt floor alone (2048) is not enough
        resolve(Context(**{**context.__dict__, "max_tokens": 2500}))


# --- the spend cap ------------------------------------------------------------------------------------------------

PRICED: Any = {"m": {"input": 4.0, "output": 8.0}}  # USD per million tokens
TOOL = judge_tools(judge(8192, 1024))
"""The synthesis's tool definition at 1024 output tokens, billed as prompt: kept back with the judge's share."""


def spend_state(
    *,
    max_tokens: int | None = None,
    max_cost: float | None = None,
    spent_in: int = 0,
    spent_out: int = 0,
    spent_cost: float = 0.0,
    window: int = 8192,
    output: int = 1024,
    model: str = "fake",
) -> Any:
    spend: Any = empty_spend()
    spend["total"] = {
        "calls": 1,
        "input_tokens": spent_in,
        "output_tokens": spent_out,
        "cost": spent_cost,
    }
    return {
        "settings": {
            "cap": {"max_tokens": max_tokens, "max_cost": max_cost},
            "prices": PRICED,
            "judge": judge(window, output, model),
        },
        "spend": spend,
    }


def test_worst_case_adds_a_tenth_and_16_tokens_to_the_prompt() -> None:
    assert worst_case(1000, 512) == (1116, 512)  # int(1000 * 1.1) + 16
    assert worst_case(0, 64) == (16, 64)
    assert worst_case(95, 300) == (120, 300)  # int(104.5) + 16


def test_a_call_fits_a_token_cap_exactly_with_the_judges_share_kept_back() -> None:
    """Spent 1500; the call 400 + 100; the judge's share 2048 + its tool + 1024: 5072 + TOOL in all."""
    wanted = [("fake", 400, 100)]
    assert 300 < TOOL < 800
    assert fits(spend_state(max_tokens=5072 + TOOL, spent_in=1000, spent_out=500), wanted) is True
    assert fits(spend_state(max_tokens=5071 + TOOL, spent_in=1000, spent_out=500), wanted) is False
    # Without the judge's share: 2000.
    assert (
        fits(spend_state(max_tokens=2000, spent_in=1000, spent_out=500), wanted, keep_judge=False)
        is True
    )
    assert (
        fits(spend_state(max_tokens=1999, spent_in=1000, spent_out=500), wanted, keep_judge=False)
        is False
    )
    assert fits(spend_state(), wanted * 1000) is True  # no cap


def test_a_call_fits_a_cost_cap_priced_per_million_tokens() -> None:
    """Spent $0.25; the call 100k in, 25k out at $4/$8 per million: $0.60; the judge (2048 + its tool, 1024):
    $0.016384 + TOOL * $4/M."""
    wanted = [("m", 100_000, 25_000)]
    state = spend_state(max_cost=0.866384 + TOOL * 4e-6, spent_cost=0.25, model="m")
    assert fits(state, wanted) is True
    assert (
        fits(spend_state(max_cost=0.8663 + TOOL * 4e-6, spent_cost=0.25, model="m"), wanted)
        is False
    )


def test_what_is_left_for_the_judges_prompt_under_a_token_cap() -> None:
    # 10000 - 3000 - 1000 spent - 1024 for its answer = 4976; int(4976 / 1.1) = 4523; less 16 = 4507; less its tool
    state = spend_state(max_tokens=10_000, spent_in=3000, spent_out=1000)
    assert left_for_judge(state) == 4507 - TOOL


def test_what_is_left_for_the_judges_prompt_under_a_cost_cap() -> None:
    # $1.00 - $0.25 spent - its answer 31250 * $8/M = $0.25 -> $0.50 = 125000 input tokens at $4/M;
    # int(125000 / 1.1) = 113636; less 16 = 113620; less its tool (sized for 31,250 output tokens)
    state = spend_state(max_cost=1.0, spent_cost=0.25, output=31_250, window=200_000, model="m")
    assert left_for_judge(state) == 113_620 - judge_tools(judge(200_000, 31_250))
    both = spend_state(
        max_cost=1.0,
        max_tokens=10_000,
        spent_in=3000,
        spent_out=1000,
        spent_cost=0.25,
        output=1024,
        model="m",
    )
    # tokens: 4976 -> 4507; dollars: 1.0 - 0.25 - 1024 * 8 / 1e6 = 0.741808 -> 185452 tokens -> 168592 - 16: tokens win
    assert left_for_judge(both) == 4507 - TOOL
    assert left_for_judge(spend_state()) is None
    assert left_for_judge(spend_state(max_cost=1.0)) is None  # a free judge: no limit


def test_charges_add_up_by_total_by_agent_and_by_phase() -> None:
    def usage(i: int, o: int) -> Any:
        return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}

    before = empty_spend()
    out = charge(
        before,
        [
            ("architect", "propose", "m", usage(1000, 250)),
            ("security", "propose", "m", usage(500, 125)),
            ("architect", "critique", "unpriced", usage(10, 20)),
        ],
        PRICED,
    )
    # $: 1000*4 + 250*8 = 6000 -> 0.006; 500*4 + 125*8 = 3000 -> 0.003; unpriced is free
    uncached = {"cache_read_tokens": 0, "cache_write_tokens": 0, "saved": 0.0}
    assert {k: v for k, v in out["total"].items() if k != "cost"} == {
        "calls": 3,
        "input_tokens": 1510,
        "output_tokens": 395,
        **uncached,
    }
    assert out["total"]["cost"] == pytest.approx(0.009)
    assert out["by_agent"]["architect"] == {
        "calls": 2,
        "input_tokens": 1010,
        "output_tokens": 270,
        "cost": pytest.approx(0.006),
        **uncached,
    }
    assert out["by_agent"]["security"] == {
        "calls": 1,
        "input_tokens": 500,
        "output_tokens": 125,
        "cost": pytest.approx(0.003),
        **uncached,
    }
    assert out["by_phase"]["propose"] == {
        "calls": 2,
        "input_tokens": 1500,
        "output_tokens": 375,
        "cost": pytest.approx(0.009),
        **uncached,
    }
    assert out["by_phase"]["critique"] == {
        "calls": 1,
        "input_tokens": 10,
        "output_tokens": 20,
        "cost": 0.0,
        **uncached,
    }
    assert before == empty_spend()  # the old spend is left as it was
