"""Explicit prompt-cache markers: Anthropic's models through OpenRouter get them, everyone else plain text.

The debates run against the real loopback OpenAI-compatible server standing in for OpenRouter; what is checked
is each request's body as it arrived.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from debate_engine import Context, compile_debate
from debate_engine.calls.markers import MARKER, blocks, marks_cache
from tests.support.openai_server import OpenAIServer, serving
from tests.support.prompt_cache import MarkedCache, long_replies


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=60, provider="openrouter") as srv:
        yield srv


def bodies(server: OpenAIServer, model: str, thread: str) -> list[dict[str, Any]]:
    """Return the chat requests of a 2-agent, 2-round debate on ``model``, one call at a time."""
    start = len(server.requests)
    compile_debate().invoke(
        {"problem": "Design a rate limiter for a public API."},
        {"configurable": {"thread_id": thread}},
        context=Context(model=model, agents="architect,security", rounds=2, max_concurrency=1),
    )
    return [r["body"] for r in server.requests[start:] if r["path"].endswith("/chat/completions")]


def joined(content: Any) -> str:
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def test_anthropic_through_openrouter_gets_marked_blocks_that_join_to_the_same_prompts(
    server: OpenAIServer,
) -> None:
    plain = bodies(server, "openrouter:openai/gpt-test", "plain")
    marked = bodies(server, "openrouter:anthropic/claude-test", "marked")
    assert all(
        isinstance(m["content"], str) for b in plain for m in b["messages"]
    )  # no marker where none is needed
    assert len(marked) == len(plain) > 5
    for body in marked:
        system, user = body["messages"]
        assert system["content"] == [
            {"type": "text", "text": system["content"][0]["text"], "cache_control": MARKER}
        ]
        parts = user["content"]
        flagged = [i for i, part in enumerate(parts) if "cache_control" in part]
        assert flagged and len(flagged) == 1, "one marker in the user message"
        tail = parts[flagged[0] + 1 :]
        assert all(part["text"].startswith("## Your task") for part in tail), (
            "the marker stops just before the task"
        )
    # the text is exactly what the same debate sends unmarked: only its packaging differs
    prompts = sorted(joined(m["content"]) for b in plain for m in b["messages"])
    assert prompts == sorted(joined(m["content"]) for b in marked for m in b["messages"])


def test_a_later_prompt_finds_the_earlier_marker_at_a_block_boundary(server: OpenAIServer) -> None:
    marked = bodies(server, "openrouter:anthropic/claude-test", "lookback")
    by_agent: dict[str, list[list[str]]] = {}
    for body in marked:
        system, user = body["messages"]
        by_agent.setdefault(system["content"][0]["text"], []).append(
            [p["text"] for p in user["content"]]
        )
    found = 0
    for prompts in by_agent.values():
        for before, after in zip(prompts, prompts[1:], strict=False):
            cached = (
                "".join(before[:-1]) if before[-1].startswith("## Your task") else "".join(before)
            )
            starts = {"".join(after[:i]) for i in range(1, len(after) + 1)}
            found += (
                cached in starts
            )  # Anthropic reads an entry only at a boundary of the later prompt's blocks
    assert found >= len(marked) // 2, (
        "an agent's next prompt should begin with its previous prompt's marked prefix"
    )


def test_under_anthropics_rule_only_the_marked_prompts_are_read_from_the_cache(
    server: OpenAIServer,
) -> None:
    """The server applies Anthropic's rule (entries only at marked blocks); the reads and writes it reports are
    what the spend counts."""
    server.prompt_cache, server.tool_args, server.words = MarkedCache(), long_replies(200), 200
    spent = {}
    for model in ("openrouter:openai/gpt-test", "openrouter:anthropic/claude-test"):
        values = compile_debate().invoke(
            {"problem": "Design a rate limiter for a public API."},
            {"configurable": {"thread_id": model}},
            context=Context(model=model, agents="architect,security", rounds=6, max_concurrency=1),
        )
        spent[model] = values["spend"]["total"]
    plain, marked = spent["openrouter:openai/gpt-test"], spent["openrouter:anthropic/claude-test"]
    assert plain.get("cache_read_tokens", 0) == plain.get("cache_write_tokens", 0) == 0
    assert (
        marked["cache_write_tokens"] > 0
        and marked["cache_read_tokens"] > 0.3 * marked["input_tokens"]
    )


@given(
    st.lists(
        st.sampled_from(
            [
                "## Problem\n",
                "### Proposal by a (round 1)\n",
                "text ",
                "\n\n",
                "## Your task\n",
                "#",
                "\n",
                "## Summary of your earlier history\n",
                "### Heading in a reply\n",
            ]
        ),
        max_size=30,
    )
)
def test_blocks_always_join_to_the_prompt_and_mark_only_before_a_task(pieces: list[str]) -> None:
    user = "".join(pieces)
    parts = blocks(user)
    assert "".join(p["text"] for p in parts) == user
    marked = [i for i, p in enumerate(parts) if "cache_control" in p]
    assert all(p["text"].strip() for p in parts) or len(parts) == 1, "no block of whitespace alone"
    if marked:  # one marker, on the last block before the task part, which is the last block
        assert (
            len(marked) == 1
            and marked[0] == len(parts) - 2
            and parts[-1]["text"].startswith("## Your task\n")
        )
    else:
        assert len(parts) == 1


def test_a_heading_inside_a_reply_is_not_a_block() -> None:
    """Anthropic looks back 20 blocks: only the prompt's own parts and turns start one, not a reply's headings."""
    reply = "## Design\n\n### Quotas\nPer tenant.\n\n### Bursts\nToken buckets.\n\n#### Notes\nnone"
    turns = "".join(f"### Refinement by a (round {r})\n{reply}\n\n" for r in range(1, 7))
    user = f"## Problem\nDesign.\n\n## Recent history, verbatim\n{turns}## Your task\nCritique."
    parts = blocks(user)
    assert "".join(p["text"] for p in parts) == user
    assert (
        len(parts) == 1 + 1 + 5 + 1
    )  # the problem, the history heading with the first turn, five more turns, the task


@pytest.mark.parametrize(
    ("spec", "marked"),
    [
        ("openrouter:anthropic/claude-sonnet-4.5", True),
        ("openrouter:Anthropic/claude-3-haiku", True),
        ("openrouter:openai/gpt-4o-mini", False),
        ("openrouter:google/gemini-2.5-flash", False),
        ("openai:gpt-4o-mini", False),
        ("local:smollm2", False),
        ("fake", False),
    ],
)
def test_which_models_are_marked(spec: str, marked: bool) -> None:
    assert marks_cache(spec) is marked
