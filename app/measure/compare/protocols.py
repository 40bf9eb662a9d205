"""The protocols a comparison runs, each a real run of the engine, and the vote's size under a budget."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from debate_engine.errors import InputError

PROTOCOLS = ("single", "vote", "debate", "debate-vote", "debate-anon", "roundtable", "escalate")
"""``single``: one answer; ``vote``: k answers, the majority wins; ``debate``: the phase debate and its judge;
``debate-vote``: the same debate settled by the agents' final positions (``synthesisMethod: voting``);
``debate-anon``: the same debate with anonymous critiques (every agent and the judge see the others as
Author A, B, C), to set beside ``debate``: what identity bias costs;
``roundtable``: the turn-taking debate of N turns and its judge; ``escalate``: the vote's k answers, settled
when all agree, else debated by the same k voters and judged."""
SAMPLED = ("single", "vote")
DEFAULT_VOTES = 5
MAX_VOTES = 999
"""The largest vote a budget sizes: odd, like every size it gives."""
ORDER = ("single", "debate", "debate-vote", "debate-anon", "roundtable", "vote", "escalate")
"""Run order: the vote is sized last, from what single and the debate spent; escalate votes with its k."""


@dataclass(frozen=True)
class Protocol:
    """One protocol as it runs: its label (in thread ids and tables), graph, settings and answers drawn."""

    name: str
    label: str
    graph: str
    """``sample`` (setup, propose, tally), ``debate`` (the phase graph) or ``roundtable`` (the turn graph)."""
    context: Any
    samples: int = 1


def parse_protocols(text: str) -> list[str]:
    """Return the protocols asked for, in order, each once; an unknown one lists the valid ones."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROTOCOLS]
    if unknown or not names:
        raise InputError(
            f"--protocols: {', '.join(unknown) or repr(text)} is not a protocol; use a comma-separated "
            f"list of {', '.join(PROTOCOLS)}"
        )
    if len(set(names)) != len(names):
        raise InputError(f"--protocols {text}: a protocol is named twice; name each once")
    return names


def protocol(
    name: str,
    context: Any,
    sample_agent: str,
    votes: int = 1,
    roundtable: Any = None,
    window: int | None = None,
) -> Protocol:
    """Return the protocol ``name`` on the run's settings: samples use one agent, the debates every configured one.

    ``escalate`` seats the vote's ``votes`` copies of the sample agent, as ``vote`` does: its vote is the vote's;
    ``window`` draws them that many at a time, stopping at the first window that agrees (its label says so).

    ``roundtable`` is the roundtable's own settings (the run's, with its turns); its label carries the turns,
    so a comparison rerun with other ``--turns`` runs new threads instead of reading back the old ones.
    """
    if name == "roundtable":
        return Protocol(name, f"roundtable-{roundtable.turns}", "roundtable", roundtable)
    if name == "escalate":
        if votes % 2 == 0:
            raise InputError(
                f"--votes {votes}: escalate needs an odd vote (an even one can tie); give an odd k"
            )
        if window is not None and not 1 <= window <= votes:
            raise InputError(f"--window {window}: give 1 to the vote's {votes} answers at a time")
        return Protocol(
            name,
            f"escalate-{votes}" + (f"-w{window}" if window else ""),
            "debate",
            dataclasses.replace(context, agents=sample_agent, votes=votes, window=window),
        )
    if name in SAMPLED:
        k = 1 if name == "single" else votes
        return Protocol(
            name,
            name if k == 1 or name == "single" else f"vote-{k}",
            "sample",
            dataclasses.replace(context, agents=sample_agent),
            k,
        )
    if name == "debate-anon":
        return Protocol(name, name, "debate", dataclasses.replace(context, anonymous=True))
    voting = "voting" if name == "debate-vote" else context.synthesis_method
    return Protocol(name, name, "debate", dataclasses.replace(context, synthesis_method=voting))


def votes_for(budget: float, per_answer: float) -> int:
    """Return the odd k whose spend per task comes nearest ``budget``: k answers cost k times one answer.

    Odd, because an even vote spends a voter on ties: with a fair draw for a tie, k + 1 voters
    are right exactly as often as k. Halfway between two odd sizes, the smaller one (the budget is
    a ceiling as much as a target).
    """
    if per_answer <= 0:
        return DEFAULT_VOTES
    k = 2 * math.ceil((budget / per_answer - 1) / 2 - 0.5) + 1
    return max(1, min(MAX_VOTES, k))


def parse_budget(text: str | None) -> float | str | None:
    """``--budget``: ``auto`` or a number of tokens per task."""
    if text is None or text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 1 <= value <= 10**12:
        raise InputError(
            f"--budget {text}: give tokens per task (a number from 1) or auto (the debate's mean)"
        )
    return value
