"""Prompt caching: how much of a debate's prompts a provider would serve from its cache, by OpenAI's rule.

3 agents x 8 rounds of 200-word contributions against the loopback OpenAI-compatible server with its
simulation of OpenAI's rule on (a repeated prefix of 1,024 tokens or more is cached in 128-token steps; the
server counts a word as a token). The figures are the debate's own spend, as the engine counts what is billed:
the share of prompt tokens that were cache hits, and the billed-equivalent input tokens (a cached token at
half the input price) against every prompt token at full price.

The prompts put their stable part first (system prompt, problem, clarifications, summary, verbatim turns oldest
first, the task last; issue 24): 56.4% of prompt tokens are cache hits, against 46.8% for the earlier layout
(task, with the problem, after the history; a refinement's proposal taken out of its history). What stays
uncached is mostly each call's new turns and task, prompts under 1,024 tokens (the early rounds, the round after a
summary) and the summarizer's prompts, which do not begin with their agent's prefix.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import PROBLEM, THREE, table, x

AGENTS, ROUNDS, WORDS = THREE, 8, 200
CACHED_PRICE = 0.5
"""A cached prompt token's price, as a share of the input price (OpenAI's discount on most models)."""


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Point the engine at the loopback server for this section only."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _debate() -> tuple[dict[str, Any], float]:
    """The debate against the server with its cache on; its spend and its wall time."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from debate_engine import Context, compile_debate
    from tests.support.openai_server import OpenAIServer
    from tests.support.prompt_cache import PromptCache, long_replies

    with OpenAIServer(words=WORDS) as server:
        server.prompt_cache, server.tool_args = PromptCache(), long_replies(WORDS)
        with _environment(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench-000000"):
            began = time.perf_counter()
            values = compile_debate().invoke({"problem": PROBLEM}, {"configurable": {"thread_id": "cache"}},
                                             context=Context(model="openai:bench", agents=AGENTS, rounds=ROUNDS))
            return values["spend"]["total"], time.perf_counter() - began


def bench_cache() -> None:
    total, seconds = _debate()
    prompt, hits = total["input_tokens"], total.get("cache_read_tokens", 0)
    billed = prompt - hits + hits * CACHED_PRICE
    table(["figure", "tokens", "against", "ratio"], [
        ["prompt tokens that were cache hits", f"{hits:,}", f"all prompt tokens {prompt:,}", f"{hits / prompt:.1%}"],
        [f"billed-equivalent input tokens (cached at {CACHED_PRICE:.0%})", f"{billed:,.0f}",
         f"every prompt token at full price {prompt:,}", x(billed / prompt)],
    ])
    print(f"({len(AGENTS.split(','))} agents x {ROUNDS} rounds, {total['calls']} calls, {seconds:.1f} s; the "
          "stable part of each prompt first)\n")
