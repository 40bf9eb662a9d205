"""Whose history is whose: the perspective filters, read from the newest turn back.

An agent's perspective is the briefings and clarifications everyone shares,
its own proposals and refinements, and the critiques aimed at it, never a
critique aimed at someone else. The judge's perspective is the whole debate
but the synthesis. In the roundtable every turn is everyone's.

In an anonymous debate a reader sees the same turns under other names
(:class:`Relabelled`): every other author by a letter (``Author A``), in an
order shuffled per run and the same for every reader, and itself as ``you``; the
transcript itself keeps who wrote what.

Nothing here scans a whole transcript: views and triggers walk back from the
newest turn to the point their summary covers, so a step's cost depends on
the uncovered tail, not on how long the debate has run.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import cast, overload

from debate_engine.memory.records import SummaryRecord, Turn

JUDGE_ID = "judge"
SHARED_KINDS = frozenset({"briefing", "clarification", "message"})
YOU = "you"
"""How an anonymous view names its reader: its own turns are by ``you``, the critiques of its proposal of ``you``."""
AUTHOR = "Author"
"""The word before an author's letter in an anonymous view: ``Author A`` wrote proposal A."""


def sees(turn: Turn, viewer: str) -> bool:
    """Return True when ``turn`` belongs to ``viewer``'s perspective."""
    kind = turn["kind"]
    if kind in SHARED_KINDS:
        return True
    if viewer == JUDGE_ID:
        return kind != "synthesis"
    if kind in ("proposal", "refinement"):
        return turn["speaker"] == viewer
    return kind == "critique" and turn["target"] == viewer


def newest_first(transcript: Sequence[Turn], viewer: str, since: int = 0) -> Iterator[Turn]:
    """Yield ``viewer``'s turns with ``seq >= since``, newest first, stopping when the caller does."""
    for i in range(len(transcript) - 1, since - 1, -1):
        turn = transcript[i]
        if sees(turn, viewer):
            yield turn


def tail(transcript: Sequence[Turn], viewer: str, since: int = 0) -> list[Turn]:
    """``viewer``'s turns with ``seq >= since``, oldest first."""
    out = list(newest_first(transcript, viewer, since))
    out.reverse()
    return out


def opening_clarifications(transcript: Sequence[Turn]) -> list[Turn]:
    """Return the clarifications that open a transcript (everyone's), read from the start only as far as they go."""
    out: list[Turn] = []
    for turn in transcript:
        if turn["kind"] != "clarification":
            break
        out.append(turn)
    return out


def perspective(transcript: Iterable[Turn], viewer: str) -> list[Turn]:
    """Every turn of ``viewer``'s perspective, oldest first (a full scan: for audits and tests)."""
    return [t for t in transcript if sees(t, viewer)]


def covered_until(summary: SummaryRecord | None) -> int:
    """Return the first ``seq`` a summary does not cover (0 without one)."""
    return summary["through"] if summary else 0


def latest_summaries(
    log: Sequence[SummaryRecord], viewers: Iterable[str]
) -> dict[str, SummaryRecord]:
    """Return the newest successful summary of each viewer, walking the log back only as far as needed."""
    wanted = set(viewers)
    found: dict[str, SummaryRecord] = {}
    for i in range(len(log) - 1, -1, -1):
        if not wanted:
            break
        record = log[i]
        if record["agent_id"] in wanted and record["status"] == "ok":
            found[record["agent_id"]] = record
            wanted.discard(record["agent_id"])
    return found


def author_labels(authors: Iterable[str], reader: str, seed: str) -> dict[str, str]:
    """Return the name each author is shown by to ``reader``: a letter each, in an order shuffled per run.

    The shuffle is seeded by the run alone, so every reader knows an author by the same letter (a critique's
    "Author B" is the judge's Author B, and so are a summary's), all debate long and again on resume, while
    two runs do not share an order: no letter says who spoke first. The reader is ``you`` to itself.
    """
    everyone = sorted(set(authors))
    random.Random(hashlib.sha256(seed.encode()).digest()).shuffle(everyone)
    labels = {author: f"{AUTHOR} {letters(i)}" for i, author in enumerate(everyone)}
    return labels | ({reader: YOU} if reader in labels else {})


def letters(index: int) -> str:
    """Return the ``index``-th letter name: A to Z, then AA, AB, ... (a panel may seat 99 voters)."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def relabel(turn: Turn, labels: Mapping[str, str]) -> Turn:
    """Return ``turn`` as an anonymous reader is shown it: speaker and target by label, no role, model or id."""
    target = turn["target"]
    speaker = labels.get(turn["speaker"], turn["speaker"])
    shown = {
        **turn,
        "id": f"{turn['kind']}:{turn['seq']}",
        "speaker": speaker,
        "role": "" if speaker != turn["speaker"] else turn["role"],
        "target": labels.get(target, target) if target else target,
        "model": None,
    }
    return cast(Turn, shown)


class Relabelled(Sequence[Turn]):
    """A transcript as one anonymous reader sees it: the same turns at the same places, each relabelled when read.

    Nothing is copied: a view walks back from the newest turn as it does over the transcript itself.
    """

    def __init__(self, transcript: Sequence[Turn], labels: Mapping[str, str]) -> None:
        self._transcript = transcript
        self._labels = labels

    def __len__(self) -> int:
        return len(self._transcript)

    @overload
    def __getitem__(self, index: int) -> Turn: ...

    @overload
    def __getitem__(self, index: slice) -> list[Turn]: ...

    def __getitem__(self, index: int | slice) -> Turn | list[Turn]:
        if isinstance(index, slice):
            return [relabel(t, self._labels) for t in self._transcript[index]]
        return relabel(self._transcript[index], self._labels)
