"""A faithful but verbose model for the loopback server: the memory's oracle.

Its summaries carry every planted fact it can see in their request, in every structure the request asks for
(the narrative and each facet list), and ignore the length they are asked for: they run to most of the
output allowance, as a verbose model's do, never past it (a reply cut at the limit would be rejected, not
stored). Its debater replies are the server's seeded words, plus, when the task asks for them, the planted
facts word for word. So a fact missing from a later prompt was lost by the engine, never by the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debate_engine.app.measure.probe.facts import Fact, contains
from debate_engine.memory.budget import TASK_HEADER
from debate_engine.prompts import load_prompt
from tests.support.fake_replies import VOCAB, reply_words, text_of

SUMMARY_TASK = load_prompt("phases/summarize").split("{")[0]
"""How a summary's task begins: its prompt is otherwise its agent's own."""
FACET_LISTS = (
    "key_points",
    "decisions",
    "unresolved",
    "action_items",
    "participants",
    "domain_entities",
)
VERBOSITY = 0.85
"""The share of the output allowance a summary fills: all of it but a margin, whatever length it was asked."""


class Oracle:
    """Install with ``server.tool_args = oracle.tool_args`` and ``server.author = oracle.author``."""

    def __init__(self, facts: Sequence[Fact], words: int) -> None:
        self.facts, self.words = list(facts), words
        self.summaries = 0

    def install(self, server: Any) -> Oracle:
        server.tool_args, server.author = self.tool_args, self.author
        return self

    def tool_args(self, body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Return a structured answer: a summary of every visible fact, or a debater's reply with the facts it is asked."""
        if name == "StructuredSummary":
            return self._structured_summary(body)
        if name == "Contribution":
            return {**args, "reply": self._reply(body)}
        return args

    def author(self, body: dict[str, Any], text: str) -> str:
        """Return a prose answer: a summary when one is asked, else the seeded words and the facts the task asks for."""
        if SUMMARY_TASK in _last_user(body):
            self.summaries += 1
            return self._narrative(body, _limit(body))
        return f"{text} {' '.join(f.sentence for f in self._asked(body))}".strip()

    def _visible(self, body: dict[str, Any]) -> list[Fact]:
        prompt = "\n".join(text_of(m.get("content")) for m in body.get("messages") or [])
        return [f for f in self.facts if contains(prompt, f)]

    def _asked(self, body: dict[str, Any]) -> list[Fact]:
        task = _last_user(body).rpartition(TASK_HEADER)[2]
        return [f for f in self.facts if f.sentence in task]

    def _reply(self, body: dict[str, Any]) -> str:
        words = " ".join(reply_words(_last_user(body), self.words)).capitalize() + "."
        return f"{words} {' '.join(f.sentence for f in self._asked(body))}".strip()

    def _narrative(self, body: dict[str, Any], room: int) -> str:
        """Every visible fact, with the verbose model's prose spread between them (not only after them)."""
        said = [f.sentence for f in self._visible(body)]
        spare = max(0, room - sum(len(s.split()) for s in said))
        each = spare // (len(said) + 1)
        filler = iter(VOCAB[i % len(VOCAB)] for i in range(spare))
        parts = [" ".join(next(filler) for _ in range(each)) + "." for _ in range(len(said) + 1)]
        return " ".join(
            p for pair in zip(parts, [*said, ""], strict=True) for p in pair if p.strip(". ")
        )

    def _structured_summary(self, body: dict[str, Any]) -> dict[str, Any]:
        self.summaries += 1
        visible = self._visible(body)
        items = [f"FACT-{self.facts.index(f) + 1:02d}: the {f.key} is {f.value}" for f in visible]
        lists: dict[str, Any] = {name: [] for name in FACET_LISTS}
        bound = _max_items(
            body
        )  # a grammar holds the lists to the schema's bounds; the narrative carries the rest
        lists["key_points"] = items[: bound.get("key_points", len(items))]
        lists["domain_entities"] = items[-bound.get("domain_entities", len(items)) :]
        used = sum(len(i.split()) + 1 for values in lists.values() for i in values) + 2 * len(
            FACET_LISTS
        )
        return {"narrative": self._narrative(body, _limit(body) - used), **lists}


def _max_items(body: dict[str, Any]) -> dict[str, int]:
    """Return the most items the summary's schema allows in each list."""
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name") == "StructuredSummary":
            props = (function.get("parameters") or {}).get("properties") or {}
            return {k: int(v["maxItems"]) for k, v in props.items() if "maxItems" in v}
    return {}


def _last_user(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return text_of(messages[-1].get("content")) if messages else ""


def _limit(body: dict[str, Any]) -> int:
    """Words the reply may hold: most of its output allowance (the server counts a word as a token)."""
    return int((body.get("max_completion_tokens") or body.get("max_tokens") or 1024) * VERBOSITY)
