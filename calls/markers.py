"""Explicit prompt-cache markers, for the providers that cache only what a request marks.

OpenAI, DeepSeek and Gemini 2.5 cache a repeated prompt prefix on their own.
Anthropic caches only up to a block marked ``cache_control`` (reached through
OpenRouter, which passes the marker on), and finds an earlier cache entry only
at a block boundary within the 20 blocks before a marker. So for those models
the prompt is sent as text blocks that join to exactly the same text: the
system prompt (marked), then the user message cut where its parts and its
history's turns begin, the block before the task marked. An agent's calls of
one phase then share the cache written by the first, and a later round's
prompt finds the previous round's entry at a turn boundary.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from debate_engine.memory.budget import TASK_HEADER
from debate_engine.providers.factory import parse_spec

MARKER = {"type": "ephemeral"}
MARKED_PREFIXES = ("anthropic/",)
"""OpenRouter model names whose provider caches only marked prompts."""
_BOUNDARY = re.compile(r"(?<=\n\n)(?=#{2,3} )")
"""Where a prompt's parts (``## ``) and its history's turns (``### ``) begin."""


def marks_cache(spec: str) -> bool:
    """Whether requests to ``spec`` carry cache markers (Anthropic's models through OpenRouter)."""
    parsed = parse_spec(spec)
    return parsed.provider == "openrouter" and parsed.name.lower().startswith(MARKED_PREFIXES)


def blocks(user: str) -> list[dict[str, Any]]:
    """The user message as text blocks that join to ``user``; the last block before the task is marked."""
    head, found, task = user.rpartition(f"\n\n{TASK_HEADER}")
    stable, rest = (head + found[:2], found[2:] + task) if found else (user, "")
    parts: list[dict[str, Any]] = [{"type": "text", "text": p} for p in _BOUNDARY.split(stable) if p]
    if parts:
        parts[-1]["cache_control"] = MARKER
    if rest:
        parts.append({"type": "text", "text": rest})
    return parts


def messages(system: str, user: str, spec: str) -> list[Any]:
    """The chat messages of one request to ``spec``: plain text, or marked blocks where the provider needs them."""
    if not marks_cache(spec):
        return [SystemMessage(system), HumanMessage(user)]
    marked_system = [{"type": "text", "text": system, "cache_control": MARKER}]
    return [SystemMessage(marked_system), HumanMessage(blocks(user))]  # type: ignore[arg-type]
