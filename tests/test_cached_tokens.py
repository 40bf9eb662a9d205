"""Cached prompt tokens, counted as providers bill them: read from the provider, priced, capped and shown.

The debates run against the real loopback OpenAI-compatible server with its simulation of OpenAI's caching
rule on: the ``cached_tokens`` it reports must reach each call's usage, the spend, the cap, the report, the
final line and ``debate list``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.calls.ledger import empty_spend
from debate_engine.calls.spend import charge
from debate_engine.calls.usage import usage_of
from debate_engine.providers.prices import price_of
from tests.support.openai_server import OpenAIServer
from tests.support.prompt_cache import PromptCache, Read, long_replies

MODEL = "openai:m"
PRICE = {"input": 10.0, "output": 10.0, "cacheRead": 1.0}
"""US dollars per million tokens: a cached prompt token costs a tenth of an uncached one."""


class Recorded(PromptCache):
    """The caching rule, keeping every ``cached_tokens`` figure the server reported."""

    def __init__(self, min_tokens: int, step: int) -> None:
        super().__init__(min_tokens, step)
        self.reported: list[int] = []

    def read(self, body: dict[str, Any]) -> Read:
        found = super().read(body)
        self.reported.append(found.details["cached_tokens"])
        return found


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with OpenAIServer(words=200) as srv:
        srv.tool_args = long_replies(200)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cache")
        yield srv


def config(tmp_path: Path, price: dict[str, float] = PRICE) -> str:
    path = tmp_path / "debate.json"
    path.write_text(json.dumps({"prices": {MODEL: price}}))
    return str(path)


def run(path: str, max_cost: float | None = None) -> dict[str, Any]:
    """Three agents, three rounds, one call at a time (so the cache's hits never depend on a race)."""
    context = Context(model=MODEL, rounds=3, config_file=path, max_cost=max_cost, max_concurrency=1)
    return compile_debate().invoke(
        {"problem": "Design a rate limiter"}, {"configurable": {"thread_id": "t"}}, context=context
    )


def requests(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Every charged request's usage, from the turns' and the summaries' own records."""
    records = [*values["transcript"], *values.get("summary_log", [])]
    return [
        a["usage"]
        for r in records
        if r.get("model")
        for a in (r.get("attempts") or [{"usage": r["usage"]}])
        if a["usage"]
    ]


def by_hand(usages: list[dict[str, Any]], cache_price: float) -> float:
    """Return what the provider bills: uncached prompt tokens at the input price, cached ones at the cache price."""
    return (
        sum(
            (u["input_tokens"] - u.get("cache_read_tokens", 0)) * PRICE["input"]
            + u.get("cache_read_tokens", 0) * cache_price
            + u["output_tokens"] * PRICE["output"]
            for u in usages
        )
        / 1e6
    )


def test_the_rule_caches_repeated_prefixes_of_1024_tokens_and_more_in_128_token_steps() -> None:
    cache = PromptCache()
    words = [f"w{i}" for i in range(3000)]
    assert (
        cache.hit(words[:1000]) == 0 and cache.hit(words[:1000]) == 0
    )  # under 1,024 tokens: never cached
    assert cache.hit(words[:1100]) == 0  # the first of its kind
    assert (
        cache.hit(words[:1100] + ["new"] * 500) == 1024
    )  # 1,100 tokens repeat: the cache serves 8 steps of 128
    assert cache.hit(words[:1600]) == 1024
    assert cache.hit(words[:1700]) == 1536  # the 1,600 tokens before it were cached: 12 whole steps
    assert cache.hit(["x", *words[1:2000]]) == 0  # a prefix differs in its first token: no hit


def test_the_server_reports_cached_tokens_only_when_its_cache_is_on(server: OpenAIServer) -> None:
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test-cache")
    prompt = [{"role": "user", "content": " ".join(f"w{i}" for i in range(1200))}]

    def ask() -> Any:
        return client.chat.completions.create(model="m", messages=prompt).usage  # type: ignore[arg-type]

    assert (
        ask().prompt_tokens_details is None
    )  # off by default: every other test sees what it always saw
    server.prompt_cache = PromptCache()
    assert ask().prompt_tokens_details.cached_tokens == 0
    second = ask()
    assert (second.prompt_tokens, second.prompt_tokens_details.cached_tokens) == (1200, 1152)


def test_usage_reads_langchains_cache_reads_and_writes_and_leaves_them_out_when_none() -> None:
    meta = {
        "input_tokens": 1000,
        "output_tokens": 10,
        "total_tokens": 1010,
        "input_token_details": {"cache_read": 640, "cache_creation": 100, "audio": 5},
    }
    assert usage_of(AIMessage("a", usage_metadata=meta)) == {  # type: ignore[arg-type]
        "input_tokens": 1000,
        "output_tokens": 10,
        "total_tokens": 1010,
        "cache_read_tokens": 640,
        "cache_write_tokens": 100,
    }
    tier = {
        **meta,
        "input_token_details": {"priority_cache_read": 512, "priority": 488},
    }  # OpenAI's priority tier
    assert usage_of(AIMessage("a", usage_metadata=tier))["cache_read_tokens"] == 512  # type: ignore[arg-type,index]
    plain = {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    assert usage_of(AIMessage("a", usage_metadata=plain)) == plain  # type: ignore[arg-type]


def test_charge_bills_cached_tokens_at_the_cache_prices_and_counts_the_saving() -> None:
    prices: Any = {
        "dear": {"input": 4.0, "output": 8.0, "cache_read": 1.0, "cache_write": 5.0},
        "unknown": {"input": 4.0, "output": 8.0},
    }  # no cache rates: every prompt token at the input price
    used = {
        "input_tokens": 1000,
        "output_tokens": 100,
        "total_tokens": 1100,
        "cache_read_tokens": 600,
        "cache_write_tokens": 200,
    }
    out = charge(
        empty_spend(), [("a", "propose", "dear", used), ("b", "propose", "unknown", used)], prices
    )
    dear = (200 * 4 + 600 * 1 + 200 * 5 + 100 * 8) / 1e6  # uncached, read, written, output
    full = (1000 * 4 + 100 * 8) / 1e6
    assert out["by_agent"]["a"]["cost"] == pytest.approx(dear)
    assert out["by_agent"]["a"]["saved"] == pytest.approx(
        full - dear
    )  # 600 * 3 saved, 200 * 1 paid extra
    assert (
        out["by_agent"]["b"]["cost"] == pytest.approx(full) and out["by_agent"]["b"]["saved"] == 0
    )
    total = out["total"]
    assert (total["cache_read_tokens"], total["cache_write_tokens"], total["input_tokens"]) == (
        1200,
        400,
        2000,
    )


def test_a_spend_and_usage_from_before_cached_tokens_were_counted_still_add_up() -> None:
    old = {
        "total": {"calls": 1, "input_tokens": 10, "output_tokens": 5, "cost": 0.5},
        "by_agent": {},
        "by_phase": {},
    }  # a checkpoint written before the cache fields existed
    out = charge(
        old,
        [("a", "propose", "p", {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})],  # type: ignore[arg-type]
        {"p": {"input": 1e6, "output": 0.0}},
    )
    assert out["total"] == {
        "calls": 2,
        "input_tokens": 20,
        "output_tokens": 10,
        "cost": pytest.approx(10.5),
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "saved": 0.0,
    }


def test_genai_prices_cache_rates_are_read_offline() -> None:
    assert price_of("openai:gpt-4o-mini") == {
        "input": 0.15,
        "output": 0.6,
        "cache_read": 0.075,
        "cache_write": 0.15,
    }
    claude = price_of(
        "openrouter:anthropic/claude-sonnet-4"
    )  # a cache write costs more than an uncached token
    assert claude == {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}


def test_cached_tokens_reach_each_calls_usage_the_spend_the_report_the_final_line_and_the_list(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.prompt_cache = cache = Recorded(
        min_tokens=64, step=16
    )  # OpenAI's rule, scaled to a short debate
    db, report, out = tmp_path / "d.sqlite", tmp_path / "r.md", tmp_path / "s.json"
    assert (
        main(
            [
                "run",
                "--model",
                MODEL,
                "--config",
                config(tmp_path),
                "--rounds",
                "3",
                "--max-concurrency",
                "1",
                "--db",
                str(db),
                "--report",
                str(report),
                "--output",
                str(out),
                "--thread-id",
                "c",
                "Design a rate limiter",
            ]
        )
        == 0
    )
    reported = sum(cache.reported)
    assert reported > 0 and len(cache.reported) == len(server.prompts())
    values = json.loads(out.read_text())
    usages = requests(values)
    assert (
        sum(u.get("cache_read_tokens", 0) for u in usages) == reported
    )  # every call's usage carries its own
    assert sum(1 for u in usages if u.get("cache_read_tokens")) == sum(
        1 for n in cache.reported if n
    )
    total = values["spend"]["total"]
    assert (
        total["cache_read_tokens"]
        == reported
        == sum(t["cache_read_tokens"] for t in values["spend"]["by_agent"].values())
    )
    assert total["cost"] == pytest.approx(by_hand(usages, PRICE["cacheRead"]))
    assert total["saved"] == pytest.approx(reported * (PRICE["input"] - PRICE["cacheRead"]) / 1e6)
    phrase = (
        f"{reported} prompt tokens cached: ${total['cost']:.4f} billed, ${total['saved']:.4f} saved"
    )
    assert f"| cached prompt tokens | {phrase} |" in report.read_text()
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"; {phrase}")
    assert main(["list", "--db", str(db)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split("\t")
    assert row[6] == f"{total['input_tokens'] + total['output_tokens']} ({reported} cached)"
    assert row[7] == f"${total['cost']:.4f} (saved ${total['saved']:.4f})"


def test_the_cost_cap_counts_cached_tokens_at_the_cache_price(
    server: OpenAIServer, tmp_path: Path
) -> None:
    cap = 0.5  # the gate reserves each phase's worst case (its tools included) at the input price on top of what was spent
    server.prompt_cache = Recorded(min_tokens=64, step=16)
    cached = run(config(tmp_path), max_cost=cap)
    usages = requests(cached)
    billed, full = by_hand(usages, PRICE["cacheRead"]), by_hand(usages, PRICE["input"])
    assert cached["spend"]["total"]["cost"] == pytest.approx(billed) and billed < 0.7 * full
    assert (
        cached.get("stopped") is None and cached["solution"]
    )  # billed, the whole debate fits the cap
    server.prompt_cache = (
        None  # the same debate, every prompt token at the input price: the cap stops it early
    )
    uncached = run(config(tmp_path), max_cost=cap)
    assert (
        uncached["stopped"] == "budget"
    )  # at the input price the same cap has no room for the debate's end
    assert uncached["spend"]["total"]["cost"] > cached["spend"]["total"]["cost"]


def test_a_config_price_may_give_cache_rates_and_a_misspelt_one_is_refused(tmp_path: Path) -> None:
    from debate_engine.config.file import ConfigError
    from debate_engine.config.resolve import resolve

    def prices(entry: dict[str, float]) -> Any:
        return resolve(Context(model=MODEL, config_file=config(tmp_path, entry)))["prices"][MODEL]

    assert prices({"input": 1.0, "output": 2.0}) == {
        "input": 1.0,
        "output": 2.0,
    }  # cached: at the input price
    assert prices({"input": 1.0, "output": 2.0, "cacheRead": 0.1, "cacheWrite": 1.25}) == {
        "input": 1.0,
        "output": 2.0,
        "cache_read": 0.1,
        "cache_write": 1.25,
    }
    with pytest.raises(
        ConfigError,
        match=r"prices\['openai:m'\]\.cacheReads: unknown key 'cacheReads'; "
        r"did you mean 'cacheRead'\?",
    ):
        prices({"input": 1.0, "output": 2.0, "cacheReads": 0.1})


def test_the_dry_run_names_the_cache_price_and_guesses_no_cache_share(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(
            ["run", "--dry-run", "--model", "openai:gpt-4o-mini", "--rounds", "1", "Design a queue"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith(
        "cached prompt tokens: not projected, the cost above is at the full input price"
    )
    assert lines[-1].endswith("(openai:gpt-4o-mini $0.075 instead of $0.15)")
    assert main(["run", "--dry-run", "--model", "fake", "--rounds", "1", "Design a queue"]) == 0
    assert "cached" not in capsys.readouterr().out  # a free model has no cache price to name
