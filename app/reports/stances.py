"""Stances: a debate's free-text positions grouped into the few views its agents hold.

Positions are free text, so two agents who agree rarely write the same words: a chart or a
table of raw positions has a legend entry per sentence. A stance is a group of positions that
say the same. A position with a short answer (a number, a choice, a word: at most
``SHORT_ANSWER`` characters) belongs to its answer's stance, compared as the verdict compares
answers (``nodes.positions.key_of``: ``42`` and ``42.0`` agree). A position with no short answer
(an open problem) is compared by its words: lower-cased, stop words and plural ``s`` dropped, two
positions are alike when their word sets' Jaccard index is at least ``SIMILAR`` and neither says
``not`` (or ``no``, ``never``, ``n't``) where the other does not. Positions with the same words
are one member; members are taken most stated first (ties by their words), each joins the most
alike stance already begun, else begins one. The grouping is therefore a function of the
multiset of positions: the same positions in any order give the same stances.

Each stance is named by its most stated member (of those stated as often, the shortest),
shortened. Stances are ranked by how many positions they hold; past the ``SHOWN`` most held
they read as one ``other``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from debate_engine.app.reports.words import counted
from debate_engine.calls.numbers import plain
from debate_engine.nodes.positions import key_of

if TYPE_CHECKING:
    from debate_engine.memory.records import Turn

SHORT_ANSWER = 40
"""An answer this long or shorter groups its position; a longer one is read as words."""
SIMILAR = 0.5
"""Two positions' word sets with at least this Jaccard index (shared words over all words) are alike."""
SHOWN = 6
"""Stances named one by one; the rest are counted as one ``other``."""
NAME_CHARS = 48
"""A stance's name is its most stated member, shortened to this many characters."""
STOP_WORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "for", "from", "has"]
    + ["have", "i", "if", "in", "into", "is", "it", "its", "it's", "of", "on", "or", "our"]
    + ["should", "so", "than", "that", "the", "their", "then", "there", "these", "this", "to"]
    + ["use", "using", "we", "will", "with", "would", "you", "your"]
)
"""Words that say nothing of a position."""
NEGATIONS = frozenset(["not", "no", "never", "without", "cannot", "nor", "none", "neither"])
"""Words (and every ``n't``) that turn a position around: read as ``not``, and a position that says
``not`` is never alike one that does not, however many other words they share."""
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
Position = Mapping[str, object]
"""A stated position as a turn records it: ``position``, ``reason``, ``confidence``, ``answer``."""


@dataclass(frozen=True)
class Stance:
    """A group of positions that say the same."""

    key: str
    """What the stance is told apart by: ``answer:42``, or ``words:`` and the first member's words."""
    name: str
    """The most stated member, shortened to ``NAME_CHARS``."""
    full: str
    """The most stated member in full."""
    positions: int
    """How many stated positions it holds."""
    rule: Literal["answer", "words"]
    """Grouped by the short answer, or by alike words."""


@dataclass(frozen=True)
class Stances:
    """A debate's stances, most held first, and which stance each stated position belongs to."""

    stances: tuple[Stance, ...]
    members: Mapping[str, int]
    """Each member's key (``member_key``) and the index of its stance."""

    def of(self, position: Position) -> int:
        """Return the index of the stance ``position`` belongs to (it must be one of those grouped)."""
        return self.members[member_key(position)]

    def shown(self, index: int) -> int:
        """Return the index a stance is shown under: its own among the first ``SHOWN``, else ``SHOWN`` (other)."""
        return min(index, SHOWN)

    @property
    def rule(self) -> str:
        """How the stances were grouped: ``answer``, ``alike words``, or ``answer or alike words``."""
        rules = {stance.rule for stance in self.stances}
        if len(rules) > 1:
            return "answer or alike words"
        return "alike words" if rules == {"words"} else "answer"

    @property
    def folded(self) -> int:
        """How many stances are counted as ``other``."""
        return max(0, len(self.stances) - SHOWN)

    def label(self, index: int) -> str:
        """Return what a shown stance reads as: its name, or ``other (N stances)``."""
        if index < SHOWN:
            return self.stances[index].name
        return f"other ({counted(self.folded, 'stance')})"

    def labels(self) -> list[str]:
        """Return the shown stances' labels, ``other`` last when any stance is folded into it."""
        return [self.label(i) for i in range(min(len(self.stances), SHOWN + 1))]


def short_answer(position: Position) -> str:
    """Return the position's answer when it is short enough to group by, else ``""``."""
    answer = plain(str(position.get("answer") or ""))
    return answer if 0 < len(answer) <= SHORT_ANSWER else ""


def words_of(text: str) -> frozenset[str]:
    """Return a text's words as positions are compared: lower case, stop words and a plural ``s`` dropped."""
    found = set()
    for word in WORD.findall(text.casefold().replace("\u2019", "'")):
        if word in STOP_WORDS:
            continue
        if word in NEGATIONS or word.endswith("n't"):
            word = "not"
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return frozenset(found)


def _text(position: Position) -> str:
    """Return what a position says in words: its one line, else its (long) answer."""
    return " ".join(str(position.get("position") or position.get("answer") or "").split())


def member_key(position: Position) -> str:
    """Return what positions that are one member share: their answer's key, or their words."""
    return _member_key(str(position.get("answer") or ""), str(position.get("position") or ""))


@lru_cache(maxsize=1 << 16)
def _member_key(answer: str, text: str) -> str:
    """``member_key`` of a position's two fields: a page of a long debate reads each text once, not per request."""
    position = {"answer": answer, "position": text}
    if short_answer(position):
        return key_of(position)
    return "words:" + " ".join(sorted(words_of(_text(position))))


def shown_text(position: Position) -> str:
    """Return how a member reads in a stance's name: the short answer as stated, else the position."""
    answer = " ".join(str(position.get("answer") or "").split())
    return answer if short_answer(position) else _text(position)


def group(positions: Iterable[Position]) -> Stances:
    """Group stated positions into stances, most held first (see the module's docstring for the rule)."""
    counts: Counter[str] = Counter()
    texts: dict[str, Counter[str]] = {}
    for position in positions:
        key = member_key(position)
        counts[key] += 1
        texts.setdefault(key, Counter())[shown_text(position)] += 1
    leader_of = {key: key for key in counts if not key.startswith("words:")}
    leader_of.update(_alike([k for k in counts if k.startswith("words:")], counts))
    held: dict[str, Counter[str]] = {}
    for key, leader in leader_of.items():
        held.setdefault(leader, Counter()).update(texts[key])
    stances = [_stance(leader, said) for leader, said in held.items()]
    stances.sort(key=lambda s: (-s.positions, s.full, s.key))
    index = {stance.key: i for i, stance in enumerate(stances)}
    return Stances(tuple(stances), {key: index[leader] for key, leader in leader_of.items()})


def _stance(leader: str, said: Counter[str]) -> Stance:
    full = min(said, key=lambda text: (-said[text], len(text), text))  # ties: the shortest
    return Stance(
        key=leader,
        name=shorten(full or "-", NAME_CHARS),
        full=full,
        positions=sum(said.values()),
        rule="words" if leader.startswith("words:") else "answer",
    )


def _alike(keys: list[str], counts: Counter[str]) -> dict[str, str]:
    """Return each word member's leader: the most alike leader before it (Jaccard at least ``SIMILAR``), or itself.

    Members are taken most stated first, then by their words. Leaders are found through their
    rarest words (prefix filtering: two sets alike by ``SIMILAR`` share one of each set's
    ``len - ceil(SIMILAR * len) + 1`` rarest words), so a long debate compares each member with the
    few leaders that can be alike, never with all.
    """
    sets = {key: frozenset(key.removeprefix("words:").split()) for key in keys}
    frequency = Counter(word for words in sets.values() for word in words)

    def rarest(words: frozenset[str]) -> list[str]:
        ranked = sorted(words, key=lambda w: (frequency[w], w))
        return ranked[: len(ranked) - math.ceil(SIMILAR * len(ranked)) + 1]

    leaders: list[str] = []
    by_word: dict[str, list[int]] = {}
    found: dict[str, str] = {}
    for key in sorted(keys, key=lambda k: (-counts[k], k)):
        words = sets[key]
        candidates = sorted({i for w in rarest(words) for i in by_word.get(w, [])})
        best, best_score = None, SIMILAR
        for i in candidates:
            score = _jaccard(words, sets[leaders[i]])
            if score > best_score or (score == best_score and best is None):
                best, best_score = i, score
        if best is not None:
            found[key] = leaders[best]
            continue
        found[key] = key
        for word in rarest(words):
            by_word.setdefault(word, []).append(len(leaders))
        leaders.append(key)
    return found


def _jaccard(one: frozenset[str], other: frozenset[str]) -> float:
    """Return the share of words two sets have in common (0 when only one of them says ``not``)."""
    if ("not" in one) != ("not" in other):
        return 0.0
    if not one and not other:
        return 1.0
    return len(one & other) / len(one | other)


def shorten(text: str, limit: int) -> str:
    """Return ``text`` on one line, cut at a word before ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1].rsplit(" ", 1)[0] if " " in line[: limit - 1] else line[: limit - 1]
    return cut.rstrip(" ,;:.") + "…"


@dataclass(frozen=True)
class Step:
    """A column of a debate's positions: a round's (or the proposals', or a roundtable turn's) stated positions."""

    label: str
    """``proposed``, ``round 2`` or ``turn 1,017``."""
    tick: str
    """The label on an axis already named by the unit: ``proposed``, ``2``, ``1,017``."""
    round: int
    stated: dict[str, Turn]
    """The turns that stated a position in this step, by agent."""
    held: dict[str, int]
    """Every agent that has stated a position by the end of this step, and its stance's index."""

    def agreeing(self, stances: Stances) -> list[tuple[int, list[str]]]:
        """Return who agrees with whom: each shown stance held at this step, most held first, and its agents.

        Agents whose stances are folded into ``other`` are listed together under it.
        """
        groups: dict[int, list[str]] = {}
        for agent, index in self.held.items():
            groups.setdefault(stances.shown(index), []).append(agent)
        return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def steps(transcript: Iterable[Turn], stances: Stances, unit: str) -> list[Step]:
    """Return the steps of a debate's stated positions in order, each with every agent's stance at its end.

    ``unit`` names a round (``round``, or ``turn`` for a roundtable). Proposals are their own step
    (``proposed``); a proposal made after round 1 (a fork's new agent) says its round.
    """
    found: list[Step] = []
    held: dict[str, int] = {}
    for turn in transcript:
        position = turn.get("position")
        if not position:
            continue
        number = int(turn.get("round") or 0)
        tick = f"{number:,}"
        if turn.get("kind") == "proposal":
            tick = "proposed" if number <= 1 else f"{tick} proposed"
        label = tick if tick == "proposed" else f"{unit} {tick}"
        if not found or found[-1].label != label:
            found.append(Step(label, tick, number, {}, {}))
        step = found[-1]
        step.stated[turn["speaker"]] = turn
        held[turn["speaker"]] = stances.of(position)
        step.held.update(held)
    return found


def stated_positions(transcript: Iterable[Turn]) -> list[Position]:
    """Return every position the turns state, in order."""
    return [turn["position"] for turn in transcript if turn.get("position")]


def stance_lines(transcript: Iterable[Turn]) -> list[str]:
    """Return the stances in a sentence, for a report (none when no turn stated a position).

    ``Stances, grouped by answer, most held first: 42 (5 positions); 41 (2 positions).``
    """
    stances = group(stated_positions(transcript))
    if not stances.stances:
        return []
    named = stances.stances[:SHOWN]
    parts = [f"{s.name} ({counted(s.positions, 'position')})" for s in named]
    if stances.folded:
        rest = sum(s.positions for s in stances.stances[SHOWN:])
        parts.append(f"other ({counted(stances.folded, 'stance')}, {counted(rest, 'position')})")
    return ["", f"Stances, grouped by {stances.rule}, most held first: " + "; ".join(parts) + "."]
