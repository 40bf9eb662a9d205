"""Identifiers kept by code: lifted from the summarized turns, merged through the chain, fitted to a slot.

A model that re-summarizes may drop or mangle an identifier (a shard key, a
flag name, a port), and a bounded structured answer can cut one off the end of
an item. So every summary's identifiers facet is built here from the turns it
covers, whatever the model wrote; the model's own entities are added to it,
never its only source. What is lifted: names with a digit, an underscore, an
inner dot or slash or an inner capital (``tenant_17_x9k4q``, ``OAuth2``,
``src/limiter.py``), URLs, quoted literals, numbers with a unit, versions,
amounts of money (``$2,340``), a bare number with its subject (``replica count
is 4817``) and runs of capitalised words (``Marta Okonkwo``). Plain words
(``amber heron``) are not: they rest on the summaries, which views show whole.
When more identifiers exist than the facet's slot holds,
those mentioned in the most turns stay, the most recent first among equals,
and the record counts what was left out: a loss is never silent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from debate_engine.memory.records import IdentifierStats, Turn
from debate_engine.memory.tokens import count_tokens

IDENTIFIERS_TITLE = "Identifiers"
IDENTIFIER_SHARE = 0.5
"""Most of a summary's slot its identifiers may take; the narrative and the other facets share the rest."""
MAX_LITERAL = 60
"""Longest quoted literal lifted whole (a longer quotation is prose, not an identifier)."""

_URL = r"https?://[^\s<>\"'`)\]]+"
_QUOTED = rf"`[^`\n]{{1,{MAX_LITERAL}}}`|\"[^\"\n]{{1,{MAX_LITERAL}}}\""
_UNITS = (
    r"ms|µs|us|ns|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|"
    r"[KMGTP]i?B|[kKMGT]b(?:ps)?|bytes?|%|rps|qps|tps|req/s|ops/s|x|tokens?|"
    r"requests?(?: per second)?|connections?|replicas?|nodes?|shards?|cores?|GHz|MHz"
)
_NUMBER_WITH_UNIT = rf"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:{_UNITS})(?![\w])"
_MONEY = r"[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:[kKMB]|bn|thousand|million|billion)(?![\w]))?"
_BARE = rf"\d[\d,]*(?:\.\d+)?(?![\w%]|[.,]\d|\s?(?:{_UNITS})(?![\w]))"
_SUBJECT_NUMBER = (
    rf"(?<![\w-])[A-Za-z][\w-]*(?:[ \t]+\w[\w-]*){{0,3}}"
    rf"(?:[ \t]+(?:is|are|was|were|of)[ \t]+|[ \t]*[=:][ \t]*){_BARE}"
)
"""A bare number with its subject: ``the replica count is 4817`` (a number alone says nothing)."""
_NAME = r"(?<![\w-])[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+(?![\w-])"
"""A run of two or more capitalised words: a person's or a product's name (``Marta Okonkwo``)."""
_VERSION = r"(?<![\w.])v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?(?![\w])"
_WORD = r"[\w@$~][\w.@$~/:+#-]*[\w/]|[\w]"
PATTERN = re.compile(
    "|".join(
        f"(?:{p})"
        for p in (
            _URL,
            _QUOTED,
            _MONEY,
            _NUMBER_WITH_UNIT,
            _VERSION,
            _SUBJECT_NUMBER,
            _NAME,
            _WORD,
        )
    )
)
_COMMON = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a", "and/or", "w/o"})
_LEADING = frozenset(
    {
        "the", "a", "an", "this", "that", "these", "those", "our", "its", "their", "your", "my", "we",
        "it", "in", "on", "at", "for", "if", "when", "and", "but", "so", "use", "then", "also", "each",
        "every",
    }
)  # fmt: skip
"""Words that open a sentence or a phrase, not a name or a subject: left off what is lifted."""
_VERBS = frozenset({"is", "are", "was", "were", "of"})


def _is_name(token: str) -> bool:
    """Return a name with a digit, an underscore, an inner dot or slash, or a capital after a small letter inside."""
    if not any(c.isalpha() for c in token) or token.casefold() in _COMMON:
        return False
    inner = token[1:]
    return (
        any(c.isdigit() for c in token)
        or "_" in token.strip("_")
        or "/" in token
        or "." in token.strip(".")
        or (any(c.isupper() for c in inner) and any(c.islower() for c in token))
    )


def lift(text: str) -> list[str]:
    """Every identifier in ``text``, in order of first appearance, each once."""
    found: dict[str, None] = {}
    for match in PATTERN.finditer(text):
        token = match.group(0)
        if token[0] in '`"':
            literal = token.strip('`"').strip()
            if literal:
                found.setdefault(token if token[0] == "`" else literal, None)
            continue
        token = token.rstrip(".,;:!?")
        if token[0] in "$€£" and any(c.isdigit() for c in token):
            found.setdefault(token, None)
        elif " " in token or "\t" in token:
            phrase = _phrase(token)
            if phrase:
                found.setdefault(phrase, None)
        elif token.startswith("http") or _is_number_like(token) or _is_name(token):
            found.setdefault(token, None)
    return list(found)


def _phrase(token: str) -> str | None:
    """Return a lifted name or subject-and-number without its opening word (``The``), if it still holds one."""
    words = token.split()
    while words and words[0].casefold() in _LEADING:
        words.pop(0)
    if not words:
        return None
    *head, last = words
    if any(c.isdigit() for c in last):  # a number with a subject: never a verb and a number alone
        subject = [w for w in head if w.casefold() not in _VERBS]
        return " ".join(words) if subject or last[0].isalpha() else None
    return " ".join(words) if head else None  # a name of two words or more


def _is_number_like(token: str) -> bool:
    return bool(re.fullmatch(_NUMBER_WITH_UNIT, token) or re.fullmatch(_VERSION, token))


def merge(
    old: IdentifierStats | None, turns: Sequence[Turn], extra: Iterable[str] = (), at: int = 0
) -> IdentifierStats:
    """``old`` with each turn's identifiers counted once per turn, and the model's own entities (``extra``)."""
    stats: IdentifierStats = {k: list(v) for k, v in (old or {}).items()}
    for turn in turns:
        for ident in lift(turn["content"]):
            _count(stats, ident, turn["seq"])
    for item in extra:
        item = " ".join(str(item).split())
        for ident in [item] if item and " " not in item else lift(item):
            _count(stats, ident, at)
    return stats


def _count(stats: IdentifierStats, ident: str, seq: int) -> None:
    count, last = stats.get(ident, [0, -1])
    stats[ident] = [count + 1, max(last, seq)]


def ranked(stats: IdentifierStats) -> list[str]:
    """Rank identifiers by how many turns mentioned them, then the most recent first."""
    return sorted(stats, key=lambda k: (-stats[k][0], -stats[k][1], k))


def fit(stats: IdentifierStats, limit_tokens: int) -> tuple[IdentifierStats, int]:
    """Return the identifiers whose line fits ``limit_tokens``, best ranked first, and how many were left out."""
    kept: IdentifierStats = {}
    used = count_tokens(f"{IDENTIFIERS_TITLE}: ")
    for ident in ranked(stats):
        cost = count_tokens(f", {ident}")
        if used + cost > limit_tokens:
            continue  # a shorter one further down may still fit
        kept[ident] = stats[ident]
        used += cost
    while (
        kept and count_tokens(line(ranked(kept))) > limit_tokens
    ):  # the joined line, counted as sent
        del kept[ranked(kept)[-1]]
    return kept, len(stats) - len(kept)


def line(identifiers: Sequence[str]) -> str:
    """Return the identifiers as one prompt line, in the order given."""
    return f"{IDENTIFIERS_TITLE}: " + ", ".join(identifiers) if identifiers else ""
