"""The probe's facts: made up, planted (as briefings or as reply instructions), and searched for.

Kept apart from running the probe and from measuring it, which both read them.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass
from functools import lru_cache
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


SHAPES = ("identifier", "words", "number", "name", "money")
"""The shapes a planted fact takes, as users state facts: an identifier (which the lifter keeps by code), two plain
words, a bare number with its subject, a person's name and a dollar amount (the last three lifted by cheap rules,
the plain words resting on the summaries alone)."""
_ADJECTIVES = (
    "amber",
    "silver",
    "quiet",
    "northern",
    "velvet",
    "copper",
    "hollow",
    "crimson",
    "gentle",
    "frozen",
    "scarlet",
    "misty",
    "golden",
    "rapid",
    "lunar",
    "wooden",
    "polar",
    "bitter",
    "humble",
    "ivory",
)
_NOUNS = (
    "heron",
    "lantern",
    "meadow",
    "falcon",
    "harbor",
    "thistle",
    "glacier",
    "orchard",
    "badger",
    "pebble",
    "canyon",
    "walrus",
    "juniper",
    "beacon",
    "marble",
    "otter",
    "saddle",
    "willow",
    "comet",
    "anchor",
)
_FIRST = (
    "Marta",
    "Tobias",
    "Ingrid",
    "Kwame",
    "Lucia",
    "Dmitri",
    "Aiko",
    "Rafael",
    "Noor",
    "Elena",
)
_LAST = (
    "Okonkwo",
    "Lindqvist",
    "Ferreira",
    "Nakamura",
    "Haddad",
    "Kowalski",
    "Brennan",
    "Achterberg",
)


@dataclass(frozen=True)
class Fact:
    """One planted fact: a question's key, an unguessable value, and the shape of that value."""

    key: str
    value: str
    round: int
    shape: str = "identifier"
    speaker: str | None = None
    """The one agent whose replies state it (None: every agent's)."""

    @property
    def sentence(self) -> str:
        return f"The {self.key} is {self.value}."


def _value(shape: str, rng: random.Random) -> str:
    if shape == "words":
        return f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}"
    if shape == "number":
        return str(rng.randint(1000, 9999))
    if shape == "name":
        return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    if shape == "money":
        return f"${rng.randint(1000, 99999):,}"
    word = rng.choice(("tenant", "shard", "node", "zone", "lane", "slot"))
    return f"{word}_{rng.randint(10, 99)}_{''.join(rng.choices(string.ascii_lowercase, k=5))}"


def make_facts(
    count: int,
    rounds: list[int],
    seed: int = 7,
    shapes: tuple[str, ...] = SHAPES,
    speakers: tuple[str, ...] = (),
) -> list[Fact]:
    """``count`` distinct facts, spread over the planting rounds and the shapes (and over ``speakers``, when given:
    each fact is then stated by one agent only)."""
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown or not shapes:
        raise ValueError(f"unknown fact shape {unknown or shapes}; use some of {', '.join(SHAPES)}")
    rng = random.Random(seed)
    facts: list[Fact] = []
    values: set[str] = set()
    for i in range(count):
        shape = shapes[i % len(shapes)]
        value = _value(shape, rng)
        while value in values or any(value in v or v in value for v in values):
            value = _value(shape, rng)
        values.add(value)
        key = KEYS[i % len(KEYS)] + (f" {i // len(KEYS) + 1}" if i >= len(KEYS) else "")
        speaker = speakers[i % len(speakers)] if speakers else None
        facts.append(Fact(key, value, rounds[i % len(rounds)], shape, speaker))
    return facts


def _by_round(facts: list[Fact], lead: str) -> dict[str, str]:
    """Return the notes by round, or by ``round:agent`` for a fact one agent states (as ``reply_notes`` reads them)."""
    notes: dict[str, list[str]] = {}
    for fact in facts:
        key = f"{fact.round}:{fact.speaker}" if fact.speaker else str(fact.round)
        notes.setdefault(key, []).append(fact.sentence)
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
    """Return a search for the fact's exact value as a whole token (``4817`` is not in ``14817``)."""
    return _pattern(fact.value).search(text.replace("\\_", "_")) is not None


@lru_cache(maxsize=256)
def _pattern(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(value)}(?![\w]|,\d)")
