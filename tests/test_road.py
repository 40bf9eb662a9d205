"""The call road, measured at a real loopback OpenAI-compatible server: money, time and concurrency.

Two models are served, ``cheap`` (priced 1 per million tokens) and ``dear`` (1,000): the agents' model is
cheap with dear as its fallback, so every charge says which model answered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from debate_engine.calls import slots
from tests.support.openai_server import OpenAIServer

CHEAP, DEAR = "openai:cheap", "openai:dear"
PRICES = {CHEAP: {"input": 1.0, "output": 1.0}, DEAR: {"input": 1000.0, "output": 1000.0}}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with OpenAIServer(words=12, hang_s=30.0) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-road")
        yield srv


def config(tmp_path: Path, **debate: Any) -> str:
    agent = {"model": CHEAP, "fallbackModels": [DEAR]}
    doc = {
        "agents": [
            {"id": "kiss", "role": "kiss", **agent},
            {"id": "security", "role": "security", **agent},
        ],
        "judge": {"role": "generalist", **agent},
        "prices": PRICES,
        "debate": {"rounds": 1, **debate},
    }
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(doc))
    return str(path)


def run(path: str, thread: str = "t", **context: Any) -> dict[str, Any]:
    graph = compile_debate()
    return graph.invoke(
        {"problem": "Design a rate limiter"},
        {"configurable": {"thread_id": thread}},
        context=Context(config_file=path, **context),
    )


async def arun(path: str, thread: str = "t", **context: Any) -> dict[str, Any]:
    graph = compile_debate()
    return await graph.ainvoke(
        {"problem": "Design a rate limiter"},
        {"configurable": {"thread_id": thread}},
        context=Context(config_file=path, **context),
    )


def billed(values: dict[str, Any]) -> float:
    """Return what the provider would bill: every turn's (and summary's) attempts at their own model's price."""
    records = [*values["transcript"], *values.get("summary_log", [])]
    total = 0.0
    for record in records:
        for attempt in record.get("attempts") or [
            {"model": record["model"], "usage": record["usage"]}
        ]:
            usage, price = attempt["usage"], PRICES.get(attempt["model"])
            if usage and price:
                total += (
                    usage["input_tokens"] * price["input"]
                    + usage["output_tokens"] * price["output"]
                ) / 1e6
    return total


def test_a_reply_from_the_fallback_is_charged_at_the_fallbacks_price_and_recorded_under_its_name(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.model_always["cheap"] = "404"
    values = run(config(tmp_path))
    models = {t["model"] for t in values["transcript"] if t["model"]}
    assert models == {DEAR}
    spend = values["spend"]["total"]
    dear_tokens = spend["input_tokens"] + spend["output_tokens"]
    assert spend["cost"] == pytest.approx(
        dear_tokens * 1000 / 1e6
    )  # every token at the fallback's price
    assert spend["cost"] == pytest.approx(billed(values))
    failed = [
        a for t in values["transcript"] for a in t.get("attempts", []) if a["outcome"] == "failed"
    ]
    assert failed and all(a["model"] == CHEAP and a["usage"] is None for a in failed)


def test_the_cost_cap_holds_when_the_dear_fallback_answers(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.model_always["cheap"] = "404"
    cap = 1.0  # dear: 1 $ per 1,000 tokens, the synthesis's tool definition alone about 500; the debate costs more
    values = run(config(tmp_path), max_cost=cap)
    assert values["spend"]["total"]["cost"] <= cap
    assert values.get("stopped") == "budget"
    assert values["spend"]["total"]["cost"] == pytest.approx(billed(values))


def test_a_hanging_primary_falls_over_to_the_fallback_within_its_deadline_on_invoke(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.model_always["cheap"] = "hang"
    values = run(config(tmp_path), timeout_s=1.0)
    assert values["solution"] and {t["model"] for t in values["transcript"] if t["model"]} == {DEAR}
    timeouts = [
        a for t in values["transcript"] for a in t.get("attempts", []) if a["outcome"] == "timeout"
    ]
    assert timeouts and all(a["model"] == CHEAP for a in timeouts)


def test_a_hanging_primary_falls_over_to_the_fallback_within_its_deadline_on_ainvoke(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.model_always["cheap"] = "hang"
    values = asyncio.run(arun(config(tmp_path), timeout_s=1.0))
    assert values["solution"] and {t["model"] for t in values["transcript"] if t["model"]} == {DEAR}


def test_every_attempt_is_charged_so_the_spend_equals_the_servers_own_count(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.faults.extend(
        ["empty", *[None] * 6, "badtool"]
    )  # a proposal empty (and retried); the judge unparsed
    values = run(config(tmp_path), max_concurrency=1, summarize=False)
    kept = [a["outcome"] for t in values["transcript"] for a in t.get("attempts", [])]
    assert "empty" in kept and "unparsed" in kept
    spend = values["spend"]["total"]
    assert spend["input_tokens"] + spend["output_tokens"] == server.usage_total()
    assert spend["calls"] == len(
        [r for r in server.requests if r["path"].endswith("/chat/completions")]
    )


def test_at_most_max_concurrency_requests_are_in_flight_summaries_included(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.latency_s = 0.05
    values = asyncio.run(arun(config(tmp_path, rounds=3), max_concurrency=1, summary_threshold=60))
    assert values["summary_log"], "the thresholds make summaries fire"
    assert server.peak_in_flight == 1
    assert slots.table_size() == 0, "a finished run leaves no slots behind"


def test_two_debates_in_one_process_each_get_their_own_slots(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.latency_s = 0.2
    path = config(tmp_path)

    async def both() -> list[dict[str, Any]]:
        return list(
            await asyncio.gather(
                arun(path, "a", max_concurrency=1), arun(path, "b", max_concurrency=1)
            )
        )

    first, second = asyncio.run(both())
    assert first["solution"] and second["solution"]
    assert server.peak_in_flight == 2  # one each: neither debate waited for the other's slot
