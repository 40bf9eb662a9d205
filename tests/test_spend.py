"""The spend cap: never over it, an answer all the same, resumable, priced from a maintained list."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from debate_engine import Context, compile_debate
from debate_engine.app.measure.estimate import estimate
from debate_engine.config.resolve import ConfigError, resolve
from debate_engine.providers.prices import cost, price_of


def run(context: Context, thread: str = "t", graph: Any = None, **kwargs: Any) -> dict[str, Any]:
    graph = graph or compile_debate()
    return graph.invoke(
        {"problem": "Design a rate limiter"},
        {"configurable": {"thread_id": thread}},
        context=context,
        **kwargs,
    )


def spent(values: dict[str, Any]) -> int:
    total = values["spend"]["total"]
    return total["input_tokens"] + total["output_tokens"]


def usage_sum(values: dict[str, Any]) -> int:
    """Tokens the models reported, counted from the records themselves (turns and summaries)."""
    turns = sum((t["usage"] or {}).get("total_tokens", 0) for t in values["transcript"])
    return turns + sum((s["usage"] or {}).get("total_tokens", 0) for s in values["summary_log"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the judge's summary read in 6 chunks against a reservation of its first request: 84,804 spent
@example(cap=83_578, words=256, agents=2, window=2048)
@given(
    cap=st.integers(4_000, 120_000),
    words=st.integers(5, 300),
    agents=st.integers(1, 4),
    window=st.sampled_from([2048, 4096, 8192]),
)
def test_the_final_spend_never_exceeds_the_cap(
    cap: int, words: int, agents: int, window: int
) -> None:
    roles = ",".join(["architect", "security", "kiss", "testing"][:agents])
    context = Context(
        model=f"fake:words={words}",
        agents=roles,
        rounds=8,
        context_window=window,
        max_output_tokens=512,
        max_tokens=cap,
    )
    try:
        values = run(context)
    except ConfigError as exc:  # a cap below the judge's share is refused up front
        assert "cannot pay for the judge's synthesis" in str(exc)
        return
    assert spent(values) <= cap
    assert usage_sum(values) == spent(values), (
        "the spend is the usage the model reported, every call counted"
    )
    assert values["solution"] is not None and values["solution"]["description"]


def test_a_cap_stops_a_ten_round_debate_early_with_a_solution() -> None:
    uncapped = run(Context(model="fake:words=150", rounds=10))
    capped = run(Context(model="fake:words=150", rounds=10, max_tokens=spent(uncapped) // 3))
    assert capped["stopped"] == "budget" and uncapped["stopped"] is None
    assert capped["status"]["round"] < 10 and capped["solution"]["structured"]
    assert capped["transcript"][-1]["kind"] == "synthesis"
    assert spent(capped) <= spent(uncapped) // 3


def test_resume_after_an_interruption_honours_what_is_left() -> None:
    cap = 40_000
    context = Context(model="fake:words=150", rounds=10, max_tokens=cap)
    graph = compile_debate(checkpointer=InMemorySaver(), interrupt_before=["refine"])
    config = {"configurable": {"thread_id": "r"}}
    graph.invoke({"problem": "Design a rate limiter"}, config, context=context)
    before = graph.get_state(config).values
    assert before["settings"]["cap"]["max_tokens"] == cap and 0 < spent(before) < cap
    values: dict[str, Any] = before
    while not values.get("solution"):  # resumed with no context at all: the cap is in state
        graph.invoke(None, config)
        values = graph.get_state(config).values
    assert spent(values) <= cap and values["stopped"] == "budget"


def test_a_cost_for_an_openai_model_matches_the_published_price() -> None:
    price = price_of("openai:gpt-4o-mini")
    assert price == {
        "input": 0.15,
        "output": 0.6,
        "cache_read": 0.075,
        "cache_write": 0.15,
    }  # USD per million tokens, as OpenAI publishes them
    assert cost(price, 200_000, 50_000) == pytest.approx(0.2 * 0.15 + 0.05 * 0.6)  # = 0.06


def test_config_prices_override_and_add_models(tmp_path: Any) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        '{"prices": {"openai:my-finetune": {"input": 2.0, "output": 8.0}}, '
        '"agents": [{"id": "a", "role": "kiss", "model": "openai:my-finetune"}], '
        '"judge": {"model": "fake"}}'
    )
    settings = resolve(Context(config_file=str(path), max_cost=5.0))
    assert settings["prices"]["openai:my-finetune"] == {"input": 2.0, "output": 8.0}
    assert settings["prices"]["fake"] == {"input": 0.0, "output": 0.0}


def test_a_cost_cap_on_a_model_with_no_known_price_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000")
    with pytest.raises(ConfigError) as caught:
        resolve(Context(model="openai:no-such-model-xyz", max_cost=1.0))
    assert "no known price for openai:no-such-model-xyz" in str(caught.value) and '"prices"' in str(
        caught.value
    )
    assert resolve(
        Context(model="openai:no-such-model-xyz", max_tokens=100_000)
    )  # a token cap needs no price


def test_a_cost_cap_prices_every_call() -> None:
    values = run(Context(model="fake:words=40", rounds=2, max_cost=1.0))
    assert values["spend"]["total"]["cost"] == 0.0  # the fake model is free, and says so
    by_agent = values["spend"]["by_agent"]
    assert set(by_agent) >= {"architect", "performance", "security", "judge"}
    assert sum(t["calls"] for t in by_agent.values()) == values["spend"]["total"]["calls"]


@pytest.mark.parametrize("rounds", [2, 6])
def test_the_dry_run_estimate_is_within_ten_percent_of_a_fake_run(rounds: int) -> None:
    context = Context(model="fake:words=120", rounds=rounds)
    projected = estimate(context, resolve(context), "Design a rate limiter")
    actual = run(context)
    assert abs(projected["tokens"] - spent(actual)) <= 0.1 * spent(actual)
    assert projected["calls"] == actual["spend"]["total"]["calls"]
    smaller = dataclasses.replace(context, max_tokens=spent(actual) // 2)
    capped = estimate(smaller, resolve(smaller), "Design a rate limiter")
    assert capped["fits"] is False


def test_the_usage_a_real_server_reports_stays_under_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.openai_server import OpenAIServer

    cap = 30_000
    with OpenAIServer(words=120) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cap-000000")
        values = run(
            Context(model="openai:test-model", rounds=10, max_tokens=cap, max_output_tokens=400)
        )
        reported = server.usage_total()
    assert values["stopped"] == "budget" and values["solution"] is not None
    assert 0 < reported <= cap
    assert spent(values) == reported, "the spend is what the server reported"
