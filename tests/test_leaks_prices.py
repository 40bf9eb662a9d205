"""Issue 40's leaks of money: a cap sizes the judge's prompt at the dearest price it can bill at, and a config
that leaves an Anthropic model's cache prices out is charged what Anthropic bills, not the input price.

The debate runs against the loopback OpenAI-compatible server standing in for OpenRouter. Its provider counts
prompts a tenth above the engine's own count (the margin the cap reserves for another tokenizer) and bills the
judge's whole prompt as a cache write, as Anthropic does the first time it sees a marked prefix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from debate_engine.calls.spend import PROMPT_MARGIN, bill
from debate_engine.memory.records import Usage
from debate_engine.memory.tokens import count_tokens
from debate_engine.nodes.cap import judge_tools, left_for_judge
from debate_engine.providers.prices import cost, price_of
from tests.support import openai_server
from tests.support.fake_replies import text_of
from tests.support.openai_server import OpenAIServer, serving
from tests.support.prompt_cache import MarkedCache, Read, long_replies, tool_tokens

JUDGE = "openrouter:anthropic/claude-test"
JUDGE_OUTPUT = 300
"""The judge's output allowance; its scripted answer spends all of it."""


def counted_as_the_provider(messages: Sequence[dict[str, Any]]) -> list[None]:
    """Return a prompt's tokens as a provider whose tokenizer counts a tenth more than the engine's does."""
    text = "\n".join(text_of(m.get("content")) for m in messages if isinstance(m, dict))
    return [None] * int(count_tokens(text) * PROMPT_MARGIN)


class WrittenWhole:
    """A prompt cache that has seen nothing: every prompt token is billed as a cache write."""

    def read(self, body: dict[str, Any]) -> Read:
        tokens = len(counted_as_the_provider(body.get("messages") or [])) + tool_tokens(body)
        return Read({"cached_tokens": 0, "cache_write_tokens": tokens}, frozenset())

    def commit(self, read: Read) -> None:
        return None


def spends_its_allowance(body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Script the judge's answer to use its whole output allowance (the server counts an answer's words)."""
    if "description" not in args:
        return args
    rest = len(json.dumps({**args, "description": ""}).split())
    return {**args, "description": " ".join(["design"] * (JUDGE_OUTPUT - rest + 1))}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=200, provider="openrouter") as srv:
        yield srv


@pytest.fixture
def writes_whole(server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    monkeypatch.setattr(openai_server, "tokens_of", counted_as_the_provider)
    server.prompt_cache, server.tool_args = WrittenWhole(), spends_its_allowance  # type: ignore[assignment]
    return server


def config(tmp_path: Path, prices: dict[str, Any], agents: str = "fake:words=300") -> str:
    path = tmp_path / "debate.json"
    path.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": role, "role": role, "model": agents}
                    for role in ("architect", "security", "kiss")
                ],
                "judge": {"model": JUDGE, "maxOutputTokens": JUDGE_OUTPUT},
                "prices": {JUDGE: prices},
            }
        )
    )
    return str(path)


def debate(path: str, **context: Any) -> dict[str, Any]:
    return compile_debate().invoke(
        {"problem": "Design a rate limiter for a public API."},
        {"configurable": {"thread_id": "t"}},
        context=Context(config_file=path, max_concurrency=1, **context),
    )


@pytest.mark.parametrize("cap", [0.02, 0.03])
def test_a_cost_cap_holds_when_the_judge_s_whole_prompt_is_billed_as_a_cache_write(
    writes_whole: OpenAIServer, tmp_path: Path, cap: float
) -> None:
    """The agents are free, so the judge's prompt fills whatever the cap leaves; at $3/M input a cache write
    bills $3.75/M, and the prompt sized at $3/M ended about 10% over the cap."""
    values = debate(config(tmp_path, {"input": 3.0, "output": 15.0}), rounds=6, max_cost=cap)
    judge = values["spend"]["by_agent"]["judge"]
    assert judge["cache_write_tokens"] == judge["input_tokens"] > 2000, (
        "the judge's prompt was billed whole as a cache write"
    )
    assert judge["output_tokens"] == JUDGE_OUTPUT
    assert values["spend"]["total"]["cost"] <= cap
    assert values["spend"]["total"]["cost"] > 0.8 * cap, "the judge still had the cap's room"


def anthropic_bill(total: dict[str, Any], input_price: float, output_price: float) -> float:
    """Dollars Anthropic bills for a tally: a cache read at 0.1x the input price, a write at 1.25x."""
    read, written = total["cache_read_tokens"], total["cache_write_tokens"]
    uncached = total["input_tokens"] - read - written
    return (
        uncached * input_price
        + read * 0.1 * input_price
        + written * 1.25 * input_price
        + total["output_tokens"] * output_price
    ) / 1e6


def test_a_config_without_cache_prices_is_charged_what_anthropic_bills_for_a_cached_debate(
    server: OpenAIServer, tmp_path: Path
) -> None:
    """The config states input and output only; the debate reads and writes the cache (Anthropic's rule at
    marked blocks). Reads charged at the input price came to 1.19x the bill."""
    server.prompt_cache, server.tool_args = MarkedCache(min_tokens=64), long_replies(200)
    path = config(tmp_path, {"input": 3.0, "output": 15.0}, agents=JUDGE)
    values = debate(path, rounds=3)
    total = values["spend"]["total"]
    assert total["cache_read_tokens"] > 0.3 * total["input_tokens"] and total["cache_write_tokens"]
    assert total["cost"] == pytest.approx(anthropic_bill(total, 3.0, 15.0), rel=1e-9)
    price = values["settings"]["prices"][JUDGE]
    assert (price["cache_read"], price["cache_write"]) == (0.3, 3.75)
    assert price["estimated"] == ["cache_read", "cache_write"]


def test_only_the_cache_prices_a_config_leaves_out_are_estimated_and_only_where_the_family_is_sure() -> (
    None
):
    """A price the config states stands, even at the input price; a read is estimated for Anthropic's models,
    never for an ``openai:`` spec, which may name any compatible server (no discount: the input price)."""
    cases: list[tuple[dict[str, float], float, float, list[str] | None]] = [
        ({}, 0.3, 3.75, ["cache_read", "cache_write"]),
        ({"cache_read": 3.0}, 3.0, 3.75, ["cache_write"]),
        ({"cache_write": 3.0}, 0.3, 3.0, ["cache_read"]),
        ({"cache_read": 0.5, "cache_write": 4.0}, 0.5, 4.0, None),
    ]
    for stated, read, write, estimated in cases:
        price = price_of(JUDGE, {JUDGE: {"input": 3.0, "output": 15.0, **stated}})  # type: ignore[typeddict-item]
        assert price is not None
        found = (price["cache_read"], price["cache_write"], price.get("estimated"))
        assert found == (read, write, estimated), stated
    compatible = price_of("openai:gpt-4o", {"openai:gpt-4o": {"input": 2.5, "output": 10.0}})
    assert compatible == {"input": 2.5, "output": 10.0}
    usage = Usage(input_tokens=1000, output_tokens=0, total_tokens=1000, cache_read_tokens=800)
    assert bill(compatible, usage)[0] == cost(compatible, 1000, 0)


def test_the_judge_s_room_is_what_its_dearest_model_leaves_at_its_dearest_prompt_price() -> None:
    """Judge and fallback: $4/M in, $8/M out (no cache) and $3/M in, $100/M out, $3.75/M a cache write.
    Cap $1, spent $0.25, answer 1,000 tokens: the fallback leaves $0.65 for 173,333 prompt tokens at $3.75/M,
    the judge $0.742 for 185,500 at $4/M; the room is the fallback's, less the margin, 16 and the tool."""
    judge: Any = {"id": "judge", "model": "a", "fallback_models": ["b"], "context_window": 400_000}
    judge["max_output_tokens"] = 1000
    spend: Any = {"total": {"calls": 1, "input_tokens": 0, "output_tokens": 0, "cost": 0.25}}
    state: Any = {
        "settings": {
            "cap": {"max_tokens": None, "max_cost": 1.0},
            "judge": judge,
            "prices": {
                "a": {"input": 4.0, "output": 8.0},
                "b": {"input": 3.0, "output": 100.0, "cache_write": 3.75},
            },
        },
        "spend": spend,
    }
    assert left_for_judge(state) == int(173_333 / PROMPT_MARGIN) - 16 - judge_tools(judge)
