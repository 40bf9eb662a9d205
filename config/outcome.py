"""How a debate ends and how its outcome is settled: ``terminationCondition``, ``synthesisMethod``, and the vote
an escalate run settles by before any debate (``votes``, ``window``).

The run context (``stop_rule``, ``synthesis_method``) overrides the config file.
What the engine does not do is refused by name, never accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from debate_engine.config.context import MAX_VOTES, Context, RoundtableContext
from debate_engine.config.file import DebateSection
from debate_engine.config.settings import AgentProfile, EscalateParams, is_human, seats
from debate_engine.config.wording import quoted

STOP_RULES = ("fixed", "convergence", "quality")
SCORE_RANGE = (1, 10)
"""The rubric's scale: a ``quality`` threshold outside it could never, or would always, stop the debate."""
SYNTHESIS_METHODS = ("judge", "voting", "merge")
MIN_ROUND = {"convergence": 2, "quality": 1}
"""The first round a rule may stop the debate in when ``minRound`` names none: convergence after the first
refinements have answered the critiques, quality from the first round's proposals on."""


def stop_rule(context: Context, debate: DebateSection) -> dict[str, Any]:
    """``{"type", "min_round", "threshold"}``: the context's rule, else the config's, else ``fixed``."""
    condition = debate.termination_condition
    kind = context.stop_rule or (condition.type if condition else "fixed")
    given = condition.min_round if condition else None
    rule: dict[str, Any] = {"type": kind, "min_round": given or MIN_ROUND.get(kind, 2)}
    if kind == "quality" and condition and condition.threshold is not None:
        rule["threshold"] = condition.threshold
    return rule


def _roundtable_problems(context: Context, debate: DebateSection) -> list[str]:
    """Return the roundtable ends by its moderator or its turns: a round's stop rule would be accepted and ignored."""
    condition = debate.termination_condition
    rule = context.stop_rule or (condition.type if condition else "fixed")
    if rule == "fixed":
        return []
    where = "stop_rule" if context.stop_rule else "debate.terminationCondition.type"
    return [
        f"{where}: {rule!r} stops the phase debate after a round; the roundtable has no rounds. Use "
        "--order moderator (the moderator declares convergence), or drop it"
    ]


def voters(context: Context, agents: list[AgentProfile]) -> tuple[list[AgentProfile], list[str]]:
    """Return an escalate run's voters (``votes`` seats the agents take in turn) and what keeps them from voting.

    Without ``votes``, the agents as they are.
    """
    problems = escalate_problems(context, sum(is_human(a) for a in agents))
    if not context.votes or problems or not 1 <= context.votes <= MAX_VOTES:
        return agents, problems  # an out-of-range vote is named by the context's check
    seated = seats(agents, context.votes)
    ids = [v["id"] for v in seated]
    return seated, [
        f"votes: {context.votes} voters give two seats the id {quoted(i)} (a configured agent has it "
        "too); rename that agent"
        for i in sorted({i for i in ids if ids.count(i) > 1})
    ]


def escalate_params(votes: int, window: int | None) -> EscalateParams:
    """Return the vote as settings fix it: every answer at once unless a window is given."""
    return EscalateParams(votes=votes, window=window or votes)


def escalate_problems(context: Context, people: int) -> list[str]:
    """Return the vote settings an escalate run cannot take: an even vote, a window wider than the vote, a vote
    asked of the roundtable or of a person's seat. (Out-of-range numbers are named by the context's check.)"""
    votes, window = context.votes, context.window
    if votes is None:
        return (
            []
            if window is None
            else ["window: draws the answers of a vote; give votes too (--protocol escalate)"]
        )
    problems = []
    if votes >= 1 and votes % 2 == 0:
        problems.append(
            f"votes: {votes} is even; give an odd number of voters (1, 3, 5, ...): an even vote can "
            "split evenly, and a tie settles nothing"
        )
    if window is not None and window > votes >= 1:
        problems.append(f"window: {window} is more than the {votes} votes; give 2 to {votes}")
    if isinstance(context, RoundtableContext):
        problems.append(
            "votes: the roundtable takes no vote; escalate runs the phase debate, drop the roundtable"
        )
    if people:
        problems.append(
            "votes: a person's seat cannot vote (the vote draws the agents' independent answers); "
            "leave the persons out of an escalate run"
        )
    return problems


def outcome_problems(context: Context, debate: DebateSection) -> list[str]:
    """Return the settings of the ending and the outcome that name something the engine does not do."""
    problems = []
    condition = debate.termination_condition
    if context.stop_rule and context.stop_rule not in STOP_RULES:
        problems.append(
            f"stop_rule: {context.stop_rule!r} is not a stop rule; use one of {', '.join(STOP_RULES)}"
        )
    threshold = condition.threshold if condition else None
    if threshold is not None and condition and condition.type != "quality":
        problems.append(
            "debate.terminationCondition.threshold: applies to 'quality' only; remove it"
        )
    elif threshold is not None and not SCORE_RANGE[0] <= threshold <= SCORE_RANGE[1]:
        problems.append(
            f"debate.terminationCondition.threshold: {threshold} is off the rubric's 1-10 scale; use a "
            "score from 1 to 10 (8 is 'strong')"
        )
    if isinstance(context, RoundtableContext):
        problems += _roundtable_problems(context, debate)
    if context.synthesis_method and context.synthesis_method not in SYNTHESIS_METHODS:
        problems.append(
            f"synthesis_method: {context.synthesis_method!r} is not a method; use one of "
            f"{', '.join(SYNTHESIS_METHODS)}"
        )
    return problems
