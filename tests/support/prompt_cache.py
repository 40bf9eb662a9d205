"""OpenAI's prompt-caching rule, for the loopback test server and the bench.

OpenAI serves a prompt's prefix from its cache when an earlier request began with the same tokens: only
prompts of 1,024 tokens or more, and only in whole 128-token steps from the start (1,024, 1,152, ...). This
keeps the hash of every 128-token prefix it has seen, so a request's hit is found in one pass, however many
requests came before. Tokens are what the caller counts (the server: one word of a message's text, tagged with
the message's role, so that a boundary between messages never matches across roles).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

from tests.support.fake_replies import reply_words, text_of

MIN_TOKENS = 1024
"""The shortest prompt OpenAI caches."""
STEP = 128
"""Cached prefixes grow in steps of this many tokens."""
_PART = re.compile(r"(?<=\n\n)(?=#{2,3} )")
"""Where a user message's parts and history turns begin."""


class Read(NamedTuple):
    """What the cache served a request as it arrived, and the entries its prompt makes once it is answered."""

    details: dict[str, int]
    """The usage's ``prompt_tokens_details``."""
    entries: frozenset[int]


def seed_of(body: dict[str, Any], *keys: str) -> int:
    """Return the start of a request's prefix: its tools (and whatever else of ``keys`` the provider puts before the
    messages), so that a request with other tools shares nothing with it."""
    return hash(tuple(json.dumps(body.get(k), sort_keys=True) for k in ("tools", *keys)))


class PromptCache:
    """OpenAI's rule: prefixes seen so far; ``read`` says how many of a prompt's tokens the cache serves.

    The tool list is part of the prefix. An entry exists once its request has been answered (``commit``): calls
    sent together do not serve each other.
    """

    def __init__(self, min_tokens: int = MIN_TOKENS, step: int = STEP) -> None:
        self.min_tokens, self.step = min_tokens, step
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def hit(self, tokens: Sequence[Hashable]) -> int:
        """Tokens of this prompt served from the cache; its own prefixes are cached for the requests after it."""
        read = self._read(tokens)
        self.commit(read)
        return read.details["cached_tokens"]

    def _read(self, tokens: Sequence[Hashable]) -> Read:
        chain, found, hits, entries = 0, True, 0, set()
        keep = len(tokens) >= self.min_tokens  # a shorter prompt is never cached
        with self._lock:
            for end in range(self.step, len(tokens) + 1, self.step):
                chain = hash((chain, tuple(tokens[end - self.step : end])))
                if found and chain in self._seen:
                    hits = end
                    continue
                found = False
                if keep:
                    entries.add(chain)
        return Read({"cached_tokens": hits if hits >= self.min_tokens else 0}, frozenset(entries))

    def read(self, body: dict[str, Any]) -> Read:
        """Return what the cache serves a request as it arrives: its tool definitions first, then its messages."""
        tools = [(seed_of(body), i) for i in range(tool_tokens(body))]
        return self._read([*tools, *tokens_of(body.get("messages") or [])])

    def commit(self, read: Read) -> None:
        """Mark the request answered: its prefixes serve the requests after it."""
        with self._lock:
            self._seen |= read.entries


def tool_tokens(body: dict[str, Any]) -> int:
    """Return the tokens a request's tool definitions add to its prompt (their JSON, by the engine's tokenizer)."""
    from debate_engine.memory.tokens import count_tokens

    return count_tokens(json.dumps(body["tools"])) if body.get("tools") else 0


def tokens_of(messages: Sequence[dict[str, Any]]) -> list[tuple[Any, str]]:
    """Return a request's tokens as the server counts them: each word of each message, tagged with its role."""
    return [
        (m.get("role"), word)
        for m in messages
        if isinstance(m, dict)
        for word in text_of(m.get("content")).split()
    ]


class MarkedCache:
    """Anthropic's rule, as OpenRouter reports it: only prefixes ending at a marked block are cached.

    A request's blocks are its messages' content parts, after its tools and tool choice (a change to either
    makes the messages' entries useless). At each block marked ``cache_control`` the prefix up to it is written
    (when it holds ``min_tokens`` or more); a read is the longest earlier entry that ends at one of the
    ``lookback`` block boundaries up to a marker. Reads are ``cached_tokens``; what a marker adds beyond them is
    ``cache_write_tokens`` (billed above the input price). An entry exists once its request has been answered.
    """

    def __init__(self, min_tokens: int = MIN_TOKENS, lookback: int = 20) -> None:
        self.min_tokens, self.lookback = min_tokens, lookback
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def read(self, body: dict[str, Any]) -> Read:
        ends: list[
            tuple[int, int, bool]
        ] = []  # after each block: the prefix's hash, its tokens, whether marked
        chain, count = seed_of(body, "tool_choice"), tool_tokens(body)
        for message in body.get("messages") or []:
            content = message.get("content")
            for part in content if isinstance(content, list) else [{"text": text_of(content)}]:
                words = [(message.get("role"), w) for w in str(part.get("text", "")).split()]
                chain, count = hash((chain, tuple(words))), count + len(words)
                ends.append((chain, count, "cache_control" in part))
        read, written, entries = 0, 0, set()
        with self._lock:
            for i, (key, tokens, marked) in enumerate(ends):
                if not marked:
                    continue
                found = [
                    n for h, n, _ in ends[max(0, i - self.lookback + 1) : i + 1] if h in self._seen
                ]
                read = max([read, *found])
                if tokens >= self.min_tokens and key not in self._seen:
                    entries.add(key)
                    written = tokens - read
        return Read({"cached_tokens": read, "cache_write_tokens": written}, frozenset(entries))

    def commit(self, read: Read) -> None:
        with self._lock:
            self._seen |= read.entries


def long_replies(words: int) -> Callable[[dict[str, Any], str, dict[str, Any]], dict[str, Any]]:
    """Return the server's ``tool_args``: structured contributions of ``words`` words, like a real model's.

    Its own structured answers are a few words each, so a debate's prompts would hardly grow and never reach
    the cache's 1,024 tokens; with these they grow round after round as a real debate's do.
    """

    def answer(body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
        if "reply" not in args:
            return args
        return {**args, "reply": " ".join(reply_words(json.dumps(body.get("messages")), words))}

    return answer


def repeated_tokens(bodies: Sequence[dict[str, Any]]) -> int:
    """Prompt tokens whose whole block an earlier request to the same agent already sent: a cache's ceiling.

    An agent is told apart by its system prompt; a block is its tool definitions, the system prompt, or a part
    or history turn of the user message. A provider can serve from its cache only what it has seen before, so no layout of the
    same blocks, under any prefix rule, makes more of them hits than this.
    """
    seen: dict[str, set[str]] = {}
    repeated = 0
    for body in bodies:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        if not messages:
            continue
        system = text_of(messages[0].get("content"))
        known = seen.setdefault(system, set())
        tools = json.dumps(body.get("tools"), sort_keys=True)
        repeated += tool_tokens(body) if tools in known else 0
        known.add(tools)
        parts = [system] + [
            p for m in messages[1:] for p in _PART.split(text_of(m.get("content"))) if p
        ]
        for part in parts:
            repeated += len(part.split()) if part in known else 0
            known.add(part)
    return repeated
