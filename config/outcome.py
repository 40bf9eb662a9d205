"""How a debate ends and how its outcome is settled: ``terminationCondition`` and ``synthesisMethod``.

The run context (``stop_rule``, ``synthesis_method``) overrides the config file.
What the engine does not do is refused by name, never accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from debate_engine.config.context import Context
from debate_engine.config.file import DebateSection

STOP_RULES = ("fixed", "convergence")
SYNTHESIS_METHODS = ("judge", "voting", "merge")


def stop_rule(context: Context, debate: DebateSection) -> dict[str, Any]:
    """``{"type", "min_round"}``: the context's rule, else the config's, else ``fixed``."""
    condition = debate.termination_condition
    kind = context.stop_rule or (condition.type if condition else "fixed")
    return {"type": kind, "min_round": condition.min_round if condition else 2}


def outcome_problems(context: Context, debate: DebateSection) -> list[str]:
    """Settings of the ending and the outcome that name something the engine does not do."""
    problems = []
    condition = debate.termination_condition
    if context.stop_rule and context.stop_rule not in STOP_RULES:
        problems.append(f"stop_rule: {context.stop_rule!r} is not a stop rule; use one of {', '.join(STOP_RULES)}")
    if condition and condition.type == "quality":
        problems.append("debate.terminationCondition.type: 'quality' (stop at a judged score) is not supported; use "
                        "'fixed' or 'convergence'")
    if condition and condition.threshold is not None and condition.type != "quality":
        problems.append("debate.terminationCondition.threshold: applies to 'quality' only; remove it")
    if context.synthesis_method and context.synthesis_method not in SYNTHESIS_METHODS:
        problems.append(f"synthesis_method: {context.synthesis_method!r} is not a method; use one of "
                        f"{', '.join(SYNTHESIS_METHODS)}")
    return problems
