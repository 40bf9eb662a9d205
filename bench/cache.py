"""Prompt caching: how much of a debate's prompts a provider would serve from its cache, by the providers' rules.

3 agents x 8 rounds of 200-word contributions against the loopback OpenAI-compatible server with its
simulation of OpenAI's rule on: a repeated prefix of 1,024 tokens or more is cached in 128-token steps; the tool
definitions are billed as prompt and come first in the prefix (a call with other tools shares nothing); an entry
is usable once its request has been answered (calls sent together do not serve each other); the server counts a
word of the messages as a token. The figures are the debate's own spend, as the engine counts what is billed:
the share of prompt tokens that were cache hits, and the billed-equivalent input tokens (a cached token at half
the input price) against every prompt token at full price. Beside them, the ceiling: the share of prompt tokens
in blocks (tool definitions, the system prompt, a part of the user message, a history turn) that an earlier
request of the same agent already sent. No cache serves what it has not seen, so no order of the same blocks,
under any provider's rule, reaches more. Then the same debate on an Anthropic model through OpenRouter, whose
prompts the engine marks, under Anthropic's rule.

What keeps OpenAI's hits under the ceiling: an agent's kinds of call carry different tools (a critique none, a
proposal or refinement its contribution, a summary its own), so each shares a prefix only with its own kind;
prompts under 1,024 tokens (the first rounds, the round after a summary); the 128-token steps.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from bench.common import PROBLEM, THREE, environment, table, x

AGENTS, ROUNDS, WORDS = THREE, 8, 200
CACHED_PRICE = 0.5
"""A cached prompt token's price, as a share of the input price (OpenAI's discount on most models)."""
ANTHROPIC_READ, ANTHROPIC_WRITE = 0.1, 1.25
"""Anthropic's prices of a prompt token read from and written to its cache (5-minute entries), as shares of the
input price."""


def _debate(model: str, marked: bool) -> tuple[dict[str, Any], float, int]:
    """Return the debate on ``model`` against the server with a cache on (Anthropic's rule when ``marked``, else
    OpenAI's); its spend, its wall time and its repeated tokens."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from debate_engine import Context, compile_debate
    from tests.support.openai_server import OpenAIServer
    from tests.support.prompt_cache import MarkedCache, PromptCache, long_replies, repeated_tokens

    with OpenAIServer(words=WORDS) as server:
        server.prompt_cache, server.tool_args = (
            MarkedCache() if marked else PromptCache(),
            long_replies(WORDS),
        )
        with environment(
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-bench-000000",
            OPENROUTER_BASE_URL=server.base_url,
            OPENROUTER_API_KEY="sk-or-bench-000000",
        ):
            began = time.perf_counter()
            values = compile_debate().invoke(
                {"problem": PROBLEM},
                {"configurable": {"thread_id": "cache"}},
                context=Context(model=model, agents=AGENTS, rounds=ROUNDS),
            )
            seconds = time.perf_counter() - began
        bodies = [r["body"] for r in server.requests if r["path"].endswith("/chat/completions")]
        return values["spend"]["total"], seconds, repeated_tokens(bodies)


def bench_cache() -> None:
    total, seconds, repeated = _debate("openai:bench", marked=False)
    prompt, hits = total["input_tokens"], total.get("cache_read_tokens", 0)
    billed = prompt - hits + hits * CACHED_PRICE
    table(
        ["figure", "tokens", "against", "ratio"],
        [
            [
                "prompt tokens that were cache hits",
                f"{hits:,}",
                f"all prompt tokens {prompt:,}",
                f"{hits / prompt:.1%}",
            ],
            [
                "ceiling: tokens in blocks the agent had sent before",
                f"{repeated:,}",
                f"all prompt tokens {prompt:,}",
                f"{repeated / prompt:.1%}",
            ],
            [
                "cache hits against the ceiling",
                f"{hits:,}",
                f"ceiling {repeated:,}",
                f"{hits / repeated:.1%}",
            ],
            [
                f"billed-equivalent input tokens (cached at {CACHED_PRICE:.0%})",
                f"{billed:,.0f}",
                f"every prompt token at full price {prompt:,}",
                x(billed / prompt),
            ],
        ],
    )
    print(
        f"({len(AGENTS.split(','))} agents x {ROUNDS} rounds, {total['calls']} calls, {seconds:.1f} s; the "
        "stable part of each prompt first)\n"
    )
    _marked()


def _marked() -> None:
    """Run the same debate on an Anthropic model through OpenRouter: the engine marks its prompts; without the
    markers Anthropic caches nothing."""
    total, seconds, _ = _debate("openrouter:anthropic/bench", marked=True)
    prompt, read, written = (
        total["input_tokens"],
        total.get("cache_read_tokens", 0),
        total.get("cache_write_tokens", 0),
    )
    billed = prompt - read - written + read * ANTHROPIC_READ + written * ANTHROPIC_WRITE
    table(
        ["figure (Anthropic's rule, marked prompts)", "tokens", "against", "ratio"],
        [
            [
                "prompt tokens read from the cache",
                f"{read:,}",
                f"all prompt tokens {prompt:,}",
                f"{read / prompt:.1%}",
            ],
            [
                "prompt tokens written to the cache",
                f"{written:,}",
                f"all prompt tokens {prompt:,}",
                f"{written / prompt:.1%}",
            ],
            [
                f"billed-equivalent input tokens (read at {ANTHROPIC_READ:.0%}, written at {ANTHROPIC_WRITE:.0%})",
                f"{billed:,.0f}",
                f"unmarked: every prompt token at full price {prompt:,}",
                x(billed / prompt),
            ],
        ],
    )
    print(f"({total['calls']} calls, {seconds:.1f} s)\n")
