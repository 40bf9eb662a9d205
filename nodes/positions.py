"""Positions: what each debater holds after each turn, how it changed, and who agrees at the end.

Every turn that takes a position (a proposal, a refinement, a roundtable
message) is one structured call: the reply's prose plus a one-line position,
the reason for it, a confidence and, when the problem has one, the short
answer. Two positions are the same when their answers match (compared exactly
as decimals when they are numbers: ``42``, ``42.0`` and ``4.2e1`` agree,
``1234567`` and ``1234568`` do not), else when their one-line positions match
word for word (case and spacing aside).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from debate_engine.calls.numbers import plain, whole_number
from debate_engine.calls.schemas import Bounded, answer_schema, chars_for, percent_field, text_field
from debate_engine.graph.state import ConversationState, StopReason
from debate_engine.memory import Turn

POSITION_KINDS = frozenset({"proposal", "refinement", "message"})
"""The turns that take a position."""
POSITION_FIELDS = ("position", "reason", "confidence", "answer")


@lru_cache(maxsize=32)
def contribution_schema(max_output_tokens: int) -> type[Bounded]:
    """Return a debater's reply and the position it takes, sized to the reply's output budget."""
    return answer_schema(
        "Contribution",
        "Your reply, and the position it takes.",
        reply=text_field(
            "Your whole reply, as you would write it.", chars_for(max_output_tokens, 0.4, floor=80)
        ),
        position=text_field(
            "Your position in one line.", min(160, chars_for(max_output_tokens, 0.12, floor=24))
        ),
        reason=text_field(
            "Why you hold it, in one sentence.",
            min(200, chars_for(max_output_tokens, 0.12, floor=24)),
        ),
        confidence=percent_field("How sure you are of your position."),
        answer=text_field(
            "The short answer when the problem has one (a number, a choice, a word), else empty.",
            min(80, chars_for(max_output_tokens, 0.05, floor=12)),
        ),
    )


def position_of(parsed: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return the position a structured contribution states (None: the model gave none)."""
    if not parsed or "position" not in parsed:
        return None
    return {key: parsed.get(key) for key in POSITION_FIELDS}


def key_of(position: Mapping[str, Any]) -> str:
    """Return what two positions are compared by: the answer (a number by its exact value), else the one-line position."""
    answer = plain(position.get("answer"))
    if answer:
        number = whole_number(answer)
        return f"answer:{number if number is not None else answer}"
    return "position:" + plain(position.get("position"))


def latest(transcript: list[Turn], before: int | None = None) -> dict[str, Turn]:
    """Each agent's newest turn that states a position (before ``seq`` when given)."""
    out: dict[str, Turn] = {}
    for turn in transcript[:before]:
        if turn.get("position"):
            out[turn["speaker"]] = turn
    return out


def majority(positions: list[dict[str, Any]]) -> str | None:
    """Return the key most positions share, when one is held by more than any other."""
    counts = Counter(key_of(p) for p in positions).most_common(2)
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def with_changes(state: ConversationState, turns: list[Turn]) -> list[Turn]:
    """Mark each new position that differs from the speaker's last: what it answered, and whether it conformed."""
    transcript = state.get("transcript", [])
    before = latest(transcript)
    for turn in turns:
        new, old = turn.get("position"), before.get(turn["speaker"])
        if not new or not old or key_of(new) == key_of(old["position"]):
            continue
        others = [t["position"] for agent, t in before.items() if agent != turn["speaker"]]
        crowd = majority(others)
        answered = [
            t["id"]
            for t in transcript[old["seq"] + 1 :]
            if t["kind"] == "critique" and t.get("target") == turn["speaker"]
        ]
        answered += [t["id"] for t in transcript[old["seq"] + 1 :] if t["kind"] == "message"][-1:]
        new["change"] = {
            "from": old["position"]["position"],
            "from_turn": old["id"],
            "after": answered,
            "toward_majority": crowd is not None and key_of(new) == crowd,
            "away_from_majority": crowd is not None and key_of(old["position"]) == crowd,
        }
    return turns


def converged(state: ConversationState, turns: list[Turn], round_no: int) -> StopReason | None:
    """``{"round", "reason"}`` when the stop rule is convergence and every agent now holds the same position."""
    settings = state["settings"]
    rule = settings.get("stop_rule") or {"type": "fixed"}
    if (
        rule["type"] != "convergence"
        or round_no < rule.get("min_round", 2)
        or round_no >= settings["rounds"]
    ):
        return None
    current = latest([*state.get("transcript", []), *turns])
    held = [current[a["id"]]["position"] for a in settings["agents"] if a["id"] in current]
    if len(held) < len(settings["agents"]) or len({key_of(p) for p in held}) != 1:
        return None
    return {
        "round": round_no,
        "reason": f"every agent holds the same position: {held[0]['position']}",
    }


def positions_event(state: ConversationState, turns: list[Turn], round_no: int) -> dict[str, Any]:
    """Return the ``positions`` stream event of a round: every agent's current position."""
    current = latest([*state.get("transcript", []), *turns])
    return {
        "event": "positions",
        "round": round_no,
        "positions": {
            agent: {k: t["position"].get(k) for k in ("position", "confidence", "answer")}
            for agent, t in current.items()
        },
        "changes": [t["speaker"] for t in turns if (t.get("position") or {}).get("change")],
    }
