"""Escalate: vote first, and debate only on a split. What the vote decided, as a pure function of the state.

An escalate debate's voters (``settings["agents"]``) answer once each, blind to each other, as round 1's
proposals, ``window`` at a time (all at once by default). The first full window whose answers share one
agreement key (``positions.key_of``: the short answer where there is one, else the one-line position word
for word) settles the outcome: that answer is the verdict, with no judge and no debate paid. When every
answer is drawn and no window agreed, the same voters debate, their answers standing as round 1's
proposals. On an open problem, whose one-line positions never coincide word for word, the vote always
splits: such a debate always escalates.

The decision is read back from the transcript each time it is needed (the router, the verdict), so a
resumed run decides exactly as the run it continues.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from debate_engine.graph.state import Ballot, ConversationState
from debate_engine.memory import Turn
from debate_engine.nodes.positions import key_of

Outcome = Literal["settled", "escalated", "drawing"]


def ballot_of(state: ConversationState) -> Ballot | None:
    """Return the vote an escalate debate started with, as far as it has been drawn; None for any other debate."""
    settings = state["settings"]
    params = settings.get("escalate")
    if not params:
        return None
    voters = [a["id"] for a in settings["agents"]][: params["votes"]]
    # a voter dropped (--on-agent-failure continue) leaves fewer: a window is never wider than the voters left
    votes, window = len(voters), min(params["window"], len(voters))
    answered = {
        t["speaker"]: t
        for t in state.get("transcript") or []
        if t["kind"] == "proposal" and t["round"] == 1
    }
    keys = {v: agreement_key(answered[v]) for v in voters if v in answered}
    agreed = next(
        (
            group
            for group in (voters[i : i + window] for i in range(0, len(voters), window))
            if len(group) == window
            and all(v in keys for v in group)
            and len({keys[v] for v in group}) == 1
        ),
        None,
    )
    split = sorted(Counter(keys.values()).values(), reverse=True)
    outcome: Outcome = (
        "settled" if agreed else "drawing" if len(keys) < len(voters) else "escalated"
    )
    ballot = Ballot(
        votes=votes,
        window=window,
        drawn=len(keys),
        split=split,
        outcome=outcome,
        settled_by=list(agreed or []),
        key=keys[agreed[0]] if agreed else None,
        mark="",
    )
    ballot["mark"] = mark(ballot)
    return ballot


def agreement_key(turn: Turn) -> str:
    """Return what a vote compares an answer by; an answer that states no position agrees with none."""
    position = turn.get("position")
    return key_of(position) if position else f"none:{turn['speaker']}"


def mark(ballot: Ballot) -> str:
    """Return how the verdict names the vote: settled by it, escalated (the split named), or cut short."""
    votes, window, drawn = ballot["votes"], ballot["window"], ballot["drawn"]
    if ballot["outcome"] == "settled":
        if window >= votes:
            return f"settled by a unanimous vote of {votes}"
        return f"settled by a unanimous window of {window}, {drawn} of {votes} votes drawn"
    if ballot["outcome"] == "escalated":
        split = "-".join(str(n) for n in ballot["split"])
        return f"escalated: split {split}" + (
            f", no window of {window} agreed" if window < votes else ""
        )
    return f"stopped in the vote: {drawn} of {votes} votes drawn"
