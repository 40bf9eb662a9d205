"""The probe's facts: made up, planted (as briefings or as reply instructions), and searched for.

Kept apart from running the probe and from measuring it, which both read them.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import Any

from debate_engine.nodes.views import DEBATER_KINDS

KEYS = (
    "shard key",
    "cache port",
    "retry budget",
    "region code",
    "queue name",
    "token bucket size",
    "lease timeout",
    "audit table",
    "canary share",
    "replica count",
    "index name",
    "rollout wave",
)


@dataclass(frozen=True)
class Fact:
    """One planted fact: a question's key and an unguessable value."""

    key: str
    value: str
    round: int

    @property
    def sentence(self) -> str:
        return f"The {self.key} is {self.value}."


def make_facts(count: int, rounds: list[int], seed: int = 7) -> list[Fact]:
    """``count`` distinct facts, spread over the planting rounds."""
    rng = random.Random(seed)
    facts = []
    for i in range(count):
        word = rng.choice(("tenant", "shard", "node", "zone", "lane", "slot"))
        value = f"{word}_{rng.randint(10, 99)}_{''.join(rng.choices(string.ascii_lowercase, k=5))}"
        key = KEYS[i % len(KEYS)] + (f" {i // len(KEYS) + 1}" if i >= len(KEYS) else "")
        facts.append(Fact(key=key, value=value, round=rounds[i % len(rounds)]))
    return facts


def _by_round(facts: list[Fact], lead: str) -> dict[str, str]:
    notes: dict[str, list[str]] = {}
    for fact in facts:
        notes.setdefault(str(fact.round), []).append(fact.sentence)
    return {r: lead + " ".join(s) for r, s in notes.items()}


def briefings(facts: list[Fact]) -> dict[str, str]:
    """Return the briefing note of each planting round."""
    return _by_round(facts, "Facts to keep for the rest of the debate: ")


def reply_notes(facts: list[Fact]) -> dict[str, str]:
    """Return the instruction added to every debater's task in each planting round."""
    return _by_round(facts, "In this reply, state each of these facts word for word: ")


def landed(transcript: list[dict[str, Any]], facts: list[Fact]) -> list[Fact]:
    """Return the facts that some debater's reply of their planting round actually states."""
    replies: dict[int, str] = {}
    for turn in transcript:
        if turn["kind"] in DEBATER_KINDS:
            replies[turn["round"]] = replies.get(turn["round"], "") + " " + turn["content"]
    return [f for f in facts if contains(replies.get(f.round, ""), f)]


def contains(text: str, fact: Fact) -> bool:
    """Return a token search for the fact's exact value."""
    return fact.value in text.replace("\\_", "_")
