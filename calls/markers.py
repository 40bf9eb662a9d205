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

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from debate_engine.memory.budget import (
    HISTORY_HEADER,
    PINNED_HEADER,
    PROBLEM_HEADER,
    SUMMARY_HEADER,
    TASK_HEADER,
)
from debate_engine.providers.factory import parse_spec

MARKER = {"type": "ephemeral"}
MARKED_PREFIXES = ("anthropic/",)
"""OpenRouter model names whose provider caches only marked prompts."""
_PARTS = "|".join(
    re.escape(h) for h in (PROBLEM_HEADER, PINNED_HEADER, SUMMARY_HEADER, HISTORY_HEADER)
)
_BOUNDARY = re.compile(
    rf"(?<=\n\n)(?=(?:{_PARTS})\n|### [^\n]*\((?:round|turn) \d+\)\n"
    r"|### Clarifications asked by |### Briefing from the organisers\n)"
)
"""Where the prompt's own parts and its history's turns begin (headings as ``memory.budget`` writes them), not a
heading inside a reply: each boundary is a block, and Anthropic looks back only 20 blocks."""


def marks_cache(spec: str) -> bool:
    """Whether requests to ``spec`` carry cache markers (Anthropic's models through OpenRouter)."""
    parsed = parse_spec(spec)
    return parsed.provider == "openrouter" and parsed.name.lower().startswith(MARKED_PREFIXES)


def blocks(user: str) -> list[dict[str, Any]]:
    """Return the user message as text blocks that join to ``user``; the last block before the task is marked.

    A prompt with no task part (an evaluator's) is one unmarked block: nothing else would read its entry.
    """
    head, found, task = user.rpartition(f"\n\n{TASK_HEADER}\n")
    if not found or not head.strip():
        return [{"type": "text", "text": user}]
    texts: list[str] = []
    for piece in _BOUNDARY.split(head + "\n\n"):
        if texts and not texts[-1].strip():
            texts[-1] += piece  # never a block of whitespace alone
        elif piece:
            texts.append(piece)
    parts: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    parts[-1]["cache_control"] = MARKER
    return [*parts, {"type": "text", "text": found[2:] + task}]


def messages(system: str, user: str, spec: str) -> list[BaseMessage]:
    """Return the chat messages of one request to ``spec``: plain text, or marked blocks where the provider needs them."""
    if not marks_cache(spec) or not system.strip():
        return [SystemMessage(system), HumanMessage(user)]
    marked_system: list[str | dict[str, Any]] = [
        {"type": "text", "text": system, "cache_control": MARKER}
    ]
    marked_user: list[str | dict[str, Any]] = [*blocks(user)]
    return [SystemMessage(marked_system), HumanMessage(marked_user)]
