"""The panel a verdict stands on: how many distinct models and providers answered the agents, and who is missing.

Counted from the transcript, never from the configuration: each agent's turn names the model that
answered it (the road records it; a fallback's, when the primary failed), so agents configured on
two models that both fell back to a third count as one model. When every agent was answered by one
model, the verdict warns that their errors are correlated: the vote is less independent than it looks.
An agent the debate went on without (``onAgentFailure: continue``) is named with its error, and the
verdict reads ``partial: 2 of 3 agents``.
"""

from __future__ import annotations

from collections.abc import Sequence

from debate_engine.config.settings import MissingAgent, RunSettings, is_human
from debate_engine.graph.state import Panel
from debate_engine.memory import Turn
from debate_engine.providers.factory import provider_of

ONE_MODEL = "its errors are correlated: the vote is less independent than it looks"
"""Why a panel on one model is worth a warning."""


def missing_of(settings: RunSettings) -> list[MissingAgent]:
    """Return the agents the debate went on without; none once they are seated again (a fork resolves anew)."""
    seated = {a["id"] for a in settings["agents"]}
    return [m for m in settings.get("missing") or [] if m["agent"] not in seated]


def partial_mark(settings: RunSettings) -> str | None:
    """Return ``partial: 2 of 3 agents`` when the debate went on without some agents; None when whole."""
    missing = missing_of(settings)
    if not missing:
        return None
    left = sum(not is_human(a) for a in settings["agents"])
    return f"partial: {left} of {left + len(missing)} agents"


def partial_status(settings: RunSettings) -> str | None:
    """Return what ``debate list`` shows of a partial debate: who is left and who is missing, with its error."""
    mark = partial_mark(settings)
    if mark is None:
        return None
    named = "; ".join(f"missing {named_with_error(m, 160)}" for m in missing_of(settings))
    return f"{mark.removeprefix('partial: ')}; {named}"


def named_with_error(missing: MissingAgent, limit: int = 500) -> str:
    """Return a missing agent named with its error, on one line: ``security (openai:x: NotFoundError: ...)``."""
    error = " ".join(missing["error"].split()).removeprefix(f"{missing['agent']} on ")
    return f"{missing['agent']} ({error[:limit]})"


def panel_of(settings: RunSettings, transcript: Sequence[Turn]) -> Panel:
    """Return who answered for the verdict: distinct models and providers, the warning, the missing agents."""
    missing = missing_of(settings)
    models_of = {a["id"]: set[str]() for a in settings["agents"] if not is_human(a)}
    models_of |= {m["agent"]: set() for m in missing}
    for turn in transcript:
        if turn["speaker"] in models_of and turn.get("model"):
            models_of[turn["speaker"]].add(str(turn["model"]))
    models = sorted(set().union(*models_of.values()))
    providers = sorted({provider_of(m) for m in models})
    answered = sum(bool(found) for found in models_of.values())
    one_model = answered >= 2 and len(models) == 1
    persons = sum(is_human(a) for a in settings["agents"])
    said = _said(answered, models, providers)
    return Panel(
        agents=len(models_of),
        persons=persons,
        answered=answered,
        models=models,
        providers=providers,
        one_model=one_model,
        said=f"{said}; {_count(persons, 'person')} beside them" if persons else said,
        warning=f"every agent is one model ({models[0]}): {ONE_MODEL}" if one_model else None,
        missing=missing,
        partial=partial_mark(settings),
    )


def _said(answered: int, models: list[str], providers: list[str]) -> str:
    """Return the panel in words: ``3 agents answered on 2 distinct models (a, b) from 1 provider (openai)``."""
    if not answered:
        return "no agent answered"
    return (
        f"{_count(answered, 'agent')} answered on {_count(len(models), 'distinct model')} "
        f"({', '.join(models)}) from {_count(len(providers), 'provider')} ({', '.join(providers)})"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
