"""A cache price the price list lacks is known to be missing: the family's published ratio stands in, said so.

genai-prices gives Anthropic's models through OpenRouter a cache read and write at the input price; Anthropic
bills a read at 0.1x and a write at 1.25x. Charged at the input price, a run that wrote the cache was billed
0.953x and a cap could be passed; one that read it 1.213x, with nothing shown as saved.
"""

from __future__ import annotations

from debate_engine.app.reports.markdown import render_report
from debate_engine.calls.spend import bill, dearest
from debate_engine.memory.records import Usage
from debate_engine.providers.prices import cost, price_of

SONNET = "openrouter:anthropic/claude-3.5-sonnet"


def test_anthropic_cache_prices_come_from_its_published_ratio_and_are_marked_estimated() -> None:
    price = price_of(SONNET)
    assert price is not None
    assert (price["cache_read"], price["cache_write"]) == (
        round(0.1 * price["input"], 9),
        round(1.25 * price["input"], 9),
    )
    assert price["estimated"] == ["cache_read", "cache_write"]


def test_the_config_s_prices_stand_and_only_a_dearer_cache_write_it_leaves_out_is_estimated() -> (
    None
):
    price = price_of(SONNET, {SONNET: {"input": 3.0, "output": 15.0, "cache_read": 0.2}})
    assert (
        price is not None and price["cache_read"] == 0.2 and price["estimated"] == ["cache_write"]
    )
    assert price_of(
        "openai:my-finetune", {"openai:my-finetune": {"input": 2.0, "output": 8.0}}
    ) == {"input": 2.0, "output": 8.0}


def test_a_known_cache_price_is_not_estimated() -> None:
    price = price_of("openai:gpt-4o-mini")
    assert price is not None and "estimated" not in price and price["cache_read"] < price["input"]


def test_a_run_that_writes_or_reads_the_cache_is_charged_what_anthropic_bills() -> None:
    price = price_of(SONNET)
    assert price is not None
    wrote = Usage(input_tokens=2000, output_tokens=100, total_tokens=2100, cache_write_tokens=1500)
    read = Usage(input_tokens=2000, output_tokens=100, total_tokens=2100, cache_read_tokens=1500)
    anthropic_write = (500 * 3.0 + 1500 * 3.75 + 100 * 15.0) / 1e6
    anthropic_read = (500 * 3.0 + 1500 * 0.3 + 100 * 15.0) / 1e6
    assert abs(bill(price, wrote)[0] - anthropic_write) < 1e-12
    dollars, saved = bill(price, read)
    assert abs(dollars - anthropic_read) < 1e-12 and saved > 0


def test_a_cap_counts_every_prompt_token_at_no_less_than_a_cache_write() -> None:
    price = price_of(SONNET)
    assert price is not None
    worst = dearest({SONNET: price}, SONNET, 1000, 100)
    assert worst == cost(price, 1000, 100, cache_write=1000) > cost(price, 1000, 100)


def test_the_report_says_which_cache_prices_were_estimated() -> None:
    price = price_of(SONNET)
    values = {
        "problem": "p",
        "transcript": [],
        "summary_log": [],
        "settings": {"agents": [], "prices": {SONNET: price}},
        "spend": None,
    }
    assert (
        f"cache prices estimated from the provider's published ratio: {SONNET} (cache read and cache write)"
        in render_report(values)
    )
