"""OpenAI's prompt-caching rule, for the loopback test server and the bench.

OpenAI serves a prompt's prefix from its cache when an earlier request began with the same tokens: only
prompts of 1,024 tokens or more, and only in whole 128-token steps from the start (1,024, 1,152, ...). This
keeps the hash of every 128-token prefix it has seen, so a request's hit is found in one pass, however many
requests came before. Tokens are what the caller counts (the server: one word of a message's text, tagged with
the message's role, so that a boundary between messages never matches across roles).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from tests.support.fake_replies import reply_words

MIN_TOKENS = 1024
"""The shortest prompt OpenAI caches."""
STEP = 128
"""Cached prefixes grow in steps of this many tokens."""


class PromptCache:
    """Prefixes seen so far; ``hit(tokens)`` says how many of a prompt's tokens the cache serves, then keeps it."""

    def __init__(self, min_tokens: int = MIN_TOKENS, step: int = STEP) -> None:
        self.min_tokens, self.step = min_tokens, step
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def hit(self, tokens: Sequence[Hashable]) -> int:
        """Tokens of this prompt served from the cache; its own prefixes are cached for the requests after it."""
        chain, found, hits = 0, True, 0
        keep = len(tokens) >= self.min_tokens  # a shorter prompt is never cached
        with self._lock:
            for end in range(self.step, len(tokens) + 1, self.step):
                chain = hash((chain, tuple(tokens[end - self.step:end])))
                if found and chain in self._seen:
                    hits = end
                elif keep:
                    found = False
                    self._seen.add(chain)
                else:
                    found = False
        return hits if hits >= self.min_tokens else 0


def long_replies(words: int) -> Callable[[dict[str, Any], str, dict[str, Any]], dict[str, Any]]:
    """The server's ``tool_args``: structured contributions of ``words`` words, like a real model's.

    Its own structured answers are a few words each, so a debate's prompts would hardly grow and never reach
    the cache's 1,024 tokens; with these they grow round after round as a real debate's do.
    """

    def answer(body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
        if "reply" not in args:
            return args
        return {**args, "reply": " ".join(reply_words(json.dumps(body.get("messages")), words))}

    return answer
