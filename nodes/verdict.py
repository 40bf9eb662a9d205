"""The verdict: the winning position, who agrees, who dissents and why, and how sure the outcome is.

The agents' final positions are counted whatever the synthesis method: the
result always says who holds the winning position and keeps every dissenter's
own position and reason verbatim. ``voting`` settles the outcome by the count
(ties broken by the summed confidence, then by a draw seeded by the run);
``judge`` lets the judge synthesize with the positions in view; ``merge`` has
the judge combine the final refinements only. The judge states its own short
answer beside the count, which may differ from the agents' plurality. An escalate debate's verdict
also carries the vote it started with (``ballot``), its mark said beside the confidence: ``settled by a
unanimous vote of 3`` (the agreeing window's answer wins, whatever the other votes drawn) or ``escalated:
split 2-1``. Every verdict states its panel (``nodes.panel``): the distinct models and providers that
answered, a warning when every agent is one model, and the agents the debate went on without, its
``partial: 2 of 3 agents`` said beside the confidence too. Only the agents left are counted: a missing
agent's last position is no vote.
"""

from __future__ import annotations

import hashlib
from typing import Any

from debate_engine.graph.state import ConversationState, Dissent, Verdict, Vote
from debate_engine.memory import Turn
from debate_engine.nodes.escalate import ballot_of
from debate_engine.nodes.panel import panel_of
from debate_engine.nodes.positions import key_of, latest


def final_positions(state: ConversationState) -> dict[str, Turn]:
    """Each agent's last turn that stated a position, in the agents' order."""
    newest = latest(state.get("transcript", []))
    return {a["id"]: newest[a["id"]] for a in state["settings"]["agents"] if a["id"] in newest}


def tally(state: ConversationState) -> list[Vote]:
    """Return the positions held at the end, most held first.

    Ties go by summed confidence, then by a draw seeded by the run.
    """
    finals = final_positions(state)
    groups: dict[str, Vote] = {}
    for agent, turn in finals.items():
        position = turn["position"]
        group = groups.setdefault(
            key_of(position),
            {
                "position": position["position"],
                "answer": position["answer"],
                "agents": [],
                "confidence": 0,
            },
        )
        group["agents"].append(agent)
        group["confidence"] += int(position.get("confidence") or 0)
    seed = run_seed(state, finals)
    ballot = ballot_of(state)  # a window of the vote agreed: its answer comes first
    settled = ballot["key"] if ballot else None
    ranked = sorted(
        groups.items(),
        key=lambda item: (
            item[0] != settled,
            -len(item[1]["agents"]),
            -item[1]["confidence"],
            draw(seed, item[0]),
        ),
    )
    return [group for _, group in ranked]


def run_seed(state: ConversationState, finals: dict[str, Turn]) -> str:
    """Return what seeds a run's tie-break: its problem and who holds what at the end.

    Not the agents' order, which would hand every tie to the first agent (the first voter of a
    vote), nor the clock: the same run always settles the same way, so a resumed run or a re-read
    one agrees.
    """
    positions = {agent: turn.get("position") or {} for agent, turn in finals.items()}
    held = "|".join(f"{agent}={key_of(position)}" for agent, position in positions.items())
    return f"{state.get('problem', '')}|{held}"


def draw(seed: str, key: str) -> str:
    """Return a position's place in a tie: a hash of the run's seed and the position, uniform over ties."""
    return hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()


def judge_note(state: ConversationState) -> str:
    """Return what the judge is told of the positions: all of them, and the winner when the agents vote."""
    votes = tally(state)
    if not votes:
        return ""
    lines = [
        f"- {', '.join(v['agents'])}: {v['position']}"
        + (f" (answer: {v['answer']})" if v["answer"] else "")
        for v in votes
    ]
    note = "\nThe agents' final positions:\n" + "\n".join(lines) + "\n"
    if state["settings"].get("synthesis") == "voting":
        win = votes[0]
        note += (
            f"\nThe agents voted: the winning position, held by {len(win['agents'])} of "
            f"{sum(len(v['agents']) for v in votes)}, is: {win['position']}. Write the solution for that "
            "position; name what the others still dispute among the cruxes.\n"
        )
    return note


def merge_material(state: ConversationState) -> str:
    """Return the agents' final refinements (or proposals), verbatim: all the judge sees when it merges."""
    return "\n\n".join(
        f"{agent} ({turn['role']}), final proposal:\n{turn['content']}"
        for agent, turn in final_positions(state).items()
    )


def verdict(state: ConversationState, judged: dict[str, Any] | None) -> Verdict:
    """Return the outcome as a user weighs it: position, agreement, dissent, cruxes, a sourced confidence.

    ``answer`` is the agents' plurality; ``judge_answer`` the judge's own short answer (None when it
    stated none, or when no judge was asked).
    """
    votes, finals = tally(state), final_positions(state)
    method = state["settings"].get("synthesis", "judge")
    judge_answer = " ".join(str((judged or {}).get("answer") or "").split()) or None
    if not votes:
        return _stated(
            state,
            {
                "method": method,
                "position": None,
                "answer": None,
                "judge_answer": judge_answer,
                "agreement": [],
                "dissent": [],
                "cruxes": list((judged or {}).get("cruxes") or []),
                "votes": [],
                "confidence": {
                    "value": (judged or {}).get("confidence"),
                    "how": "the judge's own (no positions)",
                },
            },
        )
    win = votes[0]
    held: dict[str, Any] = {agent: turn.get("position") for agent, turn in finals.items()}
    dissent = [
        Dissent(agent=agent, position=p["position"], reason=p["reason"], answer=p["answer"])
        for agent, p in held.items()
        if agent not in win["agents"]
    ]
    share = round(100 * len(win["agents"]) / len(finals))
    judge_confidence = (judged or {}).get("confidence")
    how = f"agreement: {len(win['agents'])} of {len(finals)} agents hold the position"
    if judge_confidence is not None:
        how += f"; the judge's own: {judge_confidence}"
    return _stated(
        state,
        {
            "method": method,
            "position": win["position"],
            "answer": win["answer"] or None,
            "judge_answer": judge_answer,
            "agreement": win["agents"],
            "dissent": dissent,
            "cruxes": list((judged or {}).get("cruxes") or []),
            "votes": votes,
            "confidence": {"value": share, "judge": judge_confidence, "how": how},
        },
    )


def _stated(state: ConversationState, outcome: Verdict) -> Verdict:
    """Return the verdict with its panel, and the vote an escalate debate started with; the vote's mark and a
    partial panel's are said beside the confidence."""
    panel = panel_of(state["settings"], state.get("transcript") or [])
    ballot = ballot_of(state)
    marks = [m for m in (ballot["mark"] if ballot else None, panel["partial"]) if m]
    confidence = outcome["confidence"]
    stated: Verdict = {
        **outcome,
        "panel": panel,
        "confidence": {**confidence, "how": "; ".join([confidence["how"], *marks])},
    }
    if ballot:
        stated["ballot"] = ballot
    return stated
