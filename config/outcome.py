"""How a debate ends and how its outcome is settled: ``terminationCondition`` and ``synthesisMethod``.

The run context (``stop_rule``, ``synthesis_method``) overrides the config file.
What the engine does not do is refused by name, never accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from debate_engine.config.context import Context, RoundtableContext
from debate_engine.config.file import DebateSection

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
