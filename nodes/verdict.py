"""The verdict: the winning position, who agrees, who dissents and why, and how sure the outcome is.

The agents' final positions are counted whatever the synthesis method: the
result always says who holds the winning position and keeps every dissenter's
own position and reason verbatim. ``voting`` settles the outcome by the count
(ties broken by the summed confidence, then by the order of the agents);
``judge`` lets the judge synthesize with the positions in view; ``merge`` has
the judge combine the final refinements only.
"""

from __future__ import annotations

from typing import Any

from debate_engine.graph.state import ConversationState
from debate_engine.memory import Turn
from debate_engine.nodes.positions import key_of, latest


def final_positions(state: ConversationState) -> dict[str, Turn]:
    """Each agent's last turn that stated a position, in the agents' order."""
    newest = latest(state.get("transcript", []))
    return {a["id"]: newest[a["id"]] for a in state["settings"]["agents"] if a["id"] in newest}


def tally(state: ConversationState) -> list[dict[str, Any]]:
    """The positions held at the end, most held first: ties by summed confidence, then by the agents' order."""
    groups: dict[str, dict[str, Any]] = {}
    for order, (agent, turn) in enumerate(final_positions(state).items()):
        position = turn["position"]  # type: ignore[typeddict-item]
        group = groups.setdefault(key_of(position), {"position": position["position"], "answer": position["answer"],
                                                     "agents": [], "confidence": 0, "first": order})
        group["agents"].append(agent)
        group["confidence"] += int(position.get("confidence") or 0)
    ranked = sorted(groups.values(), key=lambda g: (-len(g["agents"]), -g["confidence"], g["first"]))
    return [{k: v for k, v in g.items() if k != "first"} for g in ranked]


def judge_note(state: ConversationState) -> str:
    """What the judge is told of the positions: all of them, and the winner when the agents vote."""
    votes = tally(state)
    if not votes:
        return ""
    lines = [f"- {', '.join(v['agents'])}: {v['position']}" + (f" (answer: {v['answer']})" if v["answer"] else "")
             for v in votes]
    note = "\nThe agents' final positions:\n" + "\n".join(lines) + "\n"
    if state["settings"].get("synthesis") == "voting":
        win = votes[0]
        note += (f"\nThe agents voted: the winning position, held by {len(win['agents'])} of "
                 f"{sum(len(v['agents']) for v in votes)}, is: {win['position']}. Write the solution for that "
                 "position; name what the others still dispute among the cruxes.\n")
    return note


def merge_material(state: ConversationState) -> str:
    """The agents' final refinements (or proposals), verbatim: all the judge sees when it merges."""
    return "\n\n".join(f"{agent} ({turn['role']}), final proposal:\n{turn['content']}"
                       for agent, turn in final_positions(state).items())


def verdict(state: ConversationState, judged: dict[str, Any] | None) -> dict[str, Any]:
    """The outcome as a user weighs it: position, agreement, dissent, cruxes and a confidence that says its source."""
    votes, finals = tally(state), final_positions(state)
    method = state["settings"].get("synthesis", "judge")
    if not votes:
        return {"method": method, "position": None, "answer": None, "agreement": [], "dissent": [],
                "cruxes": list((judged or {}).get("cruxes") or []), "votes": [],
                "confidence": {"value": (judged or {}).get("confidence"), "how": "the judge's own (no positions)"}}
    win = votes[0]
    dissent = [{"agent": agent, "position": turn["position"]["position"],  # type: ignore[typeddict-item]
                "reason": turn["position"]["reason"], "answer": turn["position"]["answer"]}  # type: ignore[typeddict-item]
               for agent, turn in finals.items() if agent not in win["agents"]]
    share = round(100 * len(win["agents"]) / len(finals))
    judge_confidence = (judged or {}).get("confidence")
    how = f"agreement: {len(win['agents'])} of {len(finals)} agents hold the position"
    if judge_confidence is not None:
        how += f"; the judge's own: {judge_confidence}"
    return {"method": method, "position": win["position"], "answer": win["answer"] or None,
            "agreement": win["agents"], "dissent": dissent, "cruxes": list((judged or {}).get("cruxes") or []),
            "votes": votes, "confidence": {"value": share, "judge": judge_confidence, "how": how}}
