"""A debate's state as the debate page shows it: the round-by-agent grid, the turns, positions, verdict, figures.

Pure functions of the stored values (and of the list's rows, for the fork
tree): the templates only lay them out, escaping every text they are given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from debate_engine.app.reports.figures import PHASES, duration, figures, latency
from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.stance_chart import stance_colour
from debate_engine.app.reports.stances import SHOWN, Stances, group, stated_positions, steps
from debate_engine.app.reports.standing import finished_reason
from debate_engine.app.reports.verdict_section import checks_line
from debate_engine.app.reports.words import counted
from debate_engine.app.store.forking import kept_line
from debate_engine.nodes.positions import key_of

SHORT_ANSWER = 40
"""An answer this long or shorter is set apart in bold; a longer one reads as part of the position."""
ROUNDS_PER_PAGE = 10
"""Rounds of a phase debate per page of its grid."""
TURNS_PER_PAGE = 50
"""Turns of a roundtable per page."""


@dataclass(frozen=True)
class Pager:
    """Which page of how many is shown."""

    page: int
    pages: int

    @property
    def numbers(self) -> list[int]:
        """Return the page numbers worth a link: the first, the last and those near this one."""
        near = {1, self.pages, *range(self.page - 2, self.page + 3)}
        return sorted(n for n in near if 1 <= n <= self.pages)


def pager(count: int, per_page: int, page: int) -> tuple[Pager, slice]:
    """Return the page ``page`` of ``count`` items (the last page when it is past the end) and its slice."""
    pages = max(1, math.ceil(count / per_page))
    page = min(max(1, page), pages)
    return Pager(page, pages), slice((page - 1) * per_page, page * per_page)


def is_roundtable(values: dict[str, Any]) -> bool:
    """Return True for a roundtable (one speaker per turn)."""
    return (values.get("settings") or {}).get("protocol") == "roundtable"


def agents_of(values: dict[str, Any]) -> list[str]:
    """Return the debaters' ids in the order they first spoke, then the seats that have not spoken yet.

    A fork with other agents lists the original's first: their rounds come first.
    """
    seats = [a["id"] for a in (values.get("settings") or {}).get("agents", [])]
    spoken = [t["speaker"] for t in values.get("transcript", []) if t["kind"] in CELL_KINDS]
    return list(dict.fromkeys([*spoken, *seats]))


def grid(values: dict[str, Any], page: int, whole: bool = False) -> dict[str, Any]:
    """Return a page of rounds (all of them when ``whole``), each with every agent's proposal, critiques (on whom)
    and refinement."""
    transcript = values.get("transcript", [])
    numbers = sorted({t["round"] for t in transcript if t["kind"] in CELL_KINDS})
    shown, part = pager(len(numbers), (len(numbers) or 1) if whole else ROUNDS_PER_PAGE, page)
    wanted = set(numbers[part])
    rounds: dict[int, dict[str, dict[str, Any]]] = {r: {} for r in numbers[part]}
    for turn in transcript:
        if turn["round"] in wanted and turn["kind"] in CELL_KINDS:
            cell = rounds[turn["round"]].setdefault(turn["speaker"], {"critiques": []})
            if turn["kind"] == "critique":
                cell["critiques"].append(turn)
            else:
                cell[turn["kind"]] = turn
    return {
        "agents": agents_of(values),
        "rounds": [{"round": r, "cells": cells} for r, cells in rounds.items()],
        "pager": shown,
    }


CELL_KINDS = ("proposal", "critique", "refinement")


def turns_page(values: dict[str, Any], page: int, whole: bool = False) -> dict[str, Any]:
    """Return a page of a roundtable's turns (all of them when ``whole``; briefings and clarifications included,
    in order)."""
    transcript = [t for t in values.get("transcript", []) if t["kind"] != "synthesis"]
    shown, part = pager(len(transcript), (len(transcript) or 1) if whole else TURNS_PER_PAGE, page)
    return {"turns": transcript[part], "pager": shown, "moderation": values.get("moderation")}


def positions(values: dict[str, Any], rounds: range | None = None) -> dict[str, Any] | None:
    """Return the positions step by step (proposed, round N): who agrees with whom, and each agent's own.

    Positions are grouped into stances (``reports.stances``), coloured as in the stance chart. A
    row is a step: its agents grouped by the stance each holds at the step's end, and the position
    each agent stated in it, a change marked toward the majority, away from it, or neither
    (conformity at a glance). Steps go down and agents across, so a 10,000-turn roundtable's table
    is as wide as its agents; ``rounds`` keeps the steps of the page shown (paged with its turns).
    """
    transcript = values.get("transcript", [])
    stated = stated_positions(transcript)
    if not stated:
        return None
    stances = group(stated)
    unit = "turn" if is_roundtable(values) else "round"
    rows = [
        {
            "label": step.label,
            "agreeing": [
                {
                    "colour": stance_colour(index),
                    "stance": stances.label(index),
                    "full": stances.stances[index].full if index < SHOWN else stances.label(index),
                    "agents": agents,
                }
                for index, agents in step.agreeing(stances)
            ],
            "cells": {agent: _cell(turn, stances) for agent, turn in step.stated.items()},
        }
        for step in steps(transcript, stances, unit)
        if rounds is None or step.round in rounds
    ]
    if not rows:
        return None
    agents = list(dict.fromkeys(t["speaker"] for t in transcript if t.get("position")))
    return {"unit": unit, "agents": agents, "rows": rows, "rule": stances.rule}


def _cell(turn: Mapping[str, Any], stances: Stances) -> dict[str, Any]:
    """Return one stated position as its table cell: the words, the stance's colour, the change's mark."""
    stated = turn["position"]
    change = stated.get("change") or {}
    mark = (
        "toward"
        if change.get("toward_majority")
        else "away"
        if change.get("away_from_majority")
        else "changed"
        if change
        else ""
    )
    index = stances.shown(stances.of(stated))
    return {
        "position": stated.get("answer") or stated.get("position") or "",
        "full": stated.get("position") or "",
        "reason": stated.get("reason") or "",
        "confidence": stated.get("confidence"),
        "mark": mark,
        "seq": turn["seq"],
        "colour": stance_colour(index),
        "stance": stances.label(index),
    }


def turn_name(turn: dict[str, Any], roundtable: bool) -> str:
    """Return what every page calls a turn: a roundtable's message is ``turn N``, any other turn its round and kind.

    N counts from 1, the roundtable's own count: the one ``debate report``, ``debate fork --round``,
    the moderator and a person's prompt use. A turn's place in the transcript (the ``seq`` of its
    page's address) is never shown as a number: with clarifications or briefings before them it
    differs from the turn's own, and a phase debate counts rounds, not turns.
    """
    kind, number = turn["kind"], turn["round"]
    if kind == "message":
        return f"turn {number:,}"
    if kind in ("clarification", "synthesis"):
        return kind
    if kind == "briefing":
        return f"briefing of {'turn' if roundtable else 'round'} {number:,}"
    target = f" of {turn['target']}" if turn.get("target") else ""
    return f"round {number:,}, {kind}{target}"


def verdict(values: dict[str, Any]) -> dict[str, Any] | None:
    """Return the decision as the page opens with it: position, answer, agreement, why it stopped, then each dissent.

    Why it stopped is ``debate list``'s reason for a finished debate (``standing``), its cap named
    with its limit from the settings.
    """
    found = (values.get("solution") or {}).get("verdict")
    if not found:
        return None
    record = record_of(values)
    return {
        **found,
        "total": len(found.get("agreement", [])) + len(found.get("dissent", [])),
        "stopped": finished_reason(record, record.get("settings")),
        "checks": checks_line(record),
    }


def winner(channels: dict[str, Any]) -> dict[str, Any] | None:
    """Return the winning position and answer as the list shows them; the judge's solution when no agent stated one.

    ``channels`` may be a checkpoint's plain channels: the solution is one of them.
    """
    solution = channels.get("solution") or {}
    found = solution.get("verdict") or {}
    if found.get("position") or found.get("answer"):
        held = len(found.get("agreement", []))
        total = held + len(found.get("dissent", []))
        answer, position = found.get("answer") or "", found.get("position") or ""
        if len(answer) > SHORT_ANSWER:  # a sentence, not an answer to set in bold
            answer, position = "", position or answer
        return {
            "answer": answer,
            "position": position,
            "agreement": f"{held} of {counted(total, 'agent')} agree",
        }
    if solution.get(
        "description"
    ):  # no agent stated a position: the judge's solution is the outcome
        return {
            "answer": "",
            "position": solution["description"],
            "agreement": "the judge's solution",
        }
    return None


def figures_view(values: dict[str, Any]) -> dict[str, Any]:
    """Return the figures as the page prints them: times, calls, tokens, cached tokens, cost; by agent and phase.

    ``spend`` is what the verdict names beside the decision: cost, tokens, calls and time running.
    """
    record = record_of(values)
    found = figures(record)
    total = found["total"]
    order = list(found["by_agent"])
    by_phase = sorted(
        found["by_phase"].items(),
        key=lambda kv: (
            order.index(kv[0][0]),
            PHASES.index(kv[0][1]) if kv[0][1] in PHASES else len(PHASES),
        ),
    )
    return {
        "spend": {
            "cost": f"${found['cost']:.4f}",
            "tokens": total["prompt"] + total["completion"],
            "calls": total["calls"],
            "running": duration(found["running_s"]),
        },
        "lines": [
            ("time running", duration(found["running_s"])),
            ("time stopped", duration(found["stopped_s"])),
            ("model calls", f"{total['calls']:,}"),
            ("prompt tokens", f"{total['prompt']:,}"),
            ("completion tokens", f"{total['completion']:,}"),
            ("cached prompt tokens", f"{found['cached_tokens']:,}"),
            ("cost", f"${found['cost']:.4f}"),
            *([("before the fork", kept)] if (kept := kept_line(record)) else []),
        ],
        "by_agent": [
            (a, _counts(g), latency(g["latency_ms"])) for a, g in found["by_agent"].items()
        ],
        "by_phase": [(a, p, _counts(g), latency(g["latency_ms"])) for (a, p), g in by_phase],
    }


def _counts(group: Mapping[str, Any]) -> dict[str, Any]:
    """Return a group of figures with its counts as the pages print them: ``12,345``."""
    return {
        k: f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v
        for k, v in group.items()
    }


def fork_tree(
    thread: str, rows: list[dict[str, Any]], verdicts: dict[str, dict[str, Any] | None]
) -> dict[str, Any]:
    """Return the debate's family: its original (when a fork), and every fork made of either, with their verdicts.

    ``verdicts`` holds each named thread's verdict; a fork whose winning position differs from its
    original's is marked flipped.
    """
    by_thread = {r["thread"]: r for r in rows}
    root = thread
    while (by_thread.get(root) or {}).get("forked_from"):
        root = by_thread[root]["forked_from"]["thread"]
    return _branch(by_thread.get(root) or {"thread": root}, rows, verdicts, None)


def _branch(
    row: dict[str, Any],
    rows: list[dict[str, Any]],
    verdicts: dict[str, dict[str, Any] | None],
    parent: dict[str, Any] | None,
) -> dict[str, Any]:
    """Return a debate and its forks, each fork compared with the debate it was forked from."""
    mine = verdicts.get(row["thread"])
    origin = row.get("forked_from")
    children = [r for r in rows if (r.get("forked_from") or {}).get("thread") == row["thread"]]
    return {
        "thread": row["thread"],
        "verdict": mine,
        "round": origin["round"] if origin else None,
        "flipped": flipped(parent, mine) if origin else None,
        "forks": [_branch(r, rows, verdicts, mine) for r in children],
    }


def flipped(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool | None:
    """Return whether two verdicts' winning positions differ; None when either has none."""
    if not before or not after or not (before.get("position") or before.get("answer")):
        return None
    if not (after.get("position") or after.get("answer")):
        return None
    return key_of(before) != key_of(after)


def family(thread: str, rows: list[dict[str, Any]]) -> list[str]:
    """Return the threads of ``thread``'s fork tree: its root and every fork below it."""
    by_thread = {r["thread"]: r for r in rows}
    root = thread
    while (by_thread.get(root) or {}).get("forked_from"):
        root = by_thread[root]["forked_from"]["thread"]
    found, todo = [], [root]
    while todo:
        name = todo.pop()
        found.append(name)
        todo += [r["thread"] for r in rows if (r.get("forked_from") or {}).get("thread") == name]
    return found
