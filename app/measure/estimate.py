"""``debate run --dry-run``: project a debate's tokens and cost before spending anything.

The projection runs the debate's own arithmetic (phases, views, budgets,
summary triggers) on the offline ``fake`` model, in memory, with no provider
call. A fake-model debate projects itself exactly; for a real model each
reply is assumed to use ``REPLY_SHARE`` of its output allowance. Tokens are
then priced with each agent's real model, every prompt token at the input
price: the share a provider will serve from its prompt cache is not guessed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from debate_engine.graph.by_protocol import graph_for
from debate_engine.providers.prices import cost

REPLY_SHARE = 0.6
"""Share of the output allowance a real model's reply is assumed to use."""
WORDS_PER_TOKEN = 0.75


def estimate(context: Any, settings: Any, problem: str = "(dry run)") -> dict[str, Any]:
    """Project tokens and cost per phase and per agent of ``context`` (resolved as ``settings``), and the fit."""
    profiles = {p["id"]: p for p in (*settings["agents"], settings["judge"])}
    simulated = dataclasses.replace(
        context,
        max_tokens=None,
        max_cost=None,
        clarify=False,
        model=context.model if _all_fake(profiles) else _stand_in(profiles),
    )
    values = graph_for(context, None).invoke(
        {"problem": problem}, {"configurable": {"thread_id": "dry-run"}}, context=simulated
    )
    spend = values["spend"]
    dollars = {
        agent: cost(
            settings["prices"].get(profiles[agent]["model"], {"input": 0.0, "output": 0.0}),
            t["input_tokens"],
            t["output_tokens"],
        )
        for agent, t in spend["by_agent"].items()
    }
    tokens = spend["total"]["input_tokens"] + spend["total"]["output_tokens"]
    cap = settings["cap"]
    fits = (cap["max_tokens"] is None or tokens <= cap["max_tokens"]) and (
        cap["max_cost"] is None or sum(dollars.values()) <= cap["max_cost"]
    )
    cache_priced = sorted(
        (spec, p["cache_read"], p["input"])
        for spec, p in settings["prices"].items()
        if p.get("cache_read", p["input"]) < p["input"]
    )
    return {
        "tokens": tokens,
        "cost": sum(dollars.values()),
        "by_phase": spend["by_phase"],
        "by_agent": spend["by_agent"],
        "cost_by_agent": dollars,
        "cap": cap,
        "fits": fits,
        "calls": spend["total"]["calls"],
        "cache_priced": cache_priced,
    }


def _all_fake(profiles: dict[str, Any]) -> bool:
    """Whether the debate projects itself: every model is a fake that answers (one set to fail, as a test's is,
    would stop the projection, which calls no model; a stand-in projects it instead)."""
    return all(
        p["model"].startswith("fake") and "fail=" not in p["model"] for p in profiles.values()
    )


def _stand_in(profiles: dict[str, Any]) -> str:
    allowance = min(p["max_output_tokens"] for p in profiles.values())
    return f"fake:words={max(1, int(allowance * REPLY_SHARE * WORDS_PER_TOKEN))}"


def render_estimate(found: dict[str, Any]) -> str:
    """Return the projection as a small table."""
    lines = ["phase\tcalls\tinput tokens\toutput tokens"]
    for phase, t in sorted(found["by_phase"].items()):
        lines.append(f"{phase}\t{t['calls']}\t{t['input_tokens']}\t{t['output_tokens']}")
    lines.append(f"total\t{found['calls']}\t{found['tokens']} tokens\t${found['cost']:.4f}")
    if found.get("cache_priced"):  # what share a provider caches is its own: no share is guessed
        rates = ", ".join(
            f"{spec} ${read:g} instead of ${full:g}" for spec, read, full in found["cache_priced"]
        )
        lines.append(
            "cached prompt tokens: not projected, the cost above is at the full input price; the spend "
            f"and the cap bill those the provider reports cached at the cache price per million ({rates})"
        )
    cap = found["cap"]
    if cap["max_tokens"] is not None or cap["max_cost"] is not None:
        limit = ", ".join(f"{k} {v}" for k, v in cap.items() if v is not None)
        verdict = (
            "fits"
            if found["fits"]
            else "does NOT fit: the debate will stop early and the judge synthesize"
        )
        lines.append(f"cap ({limit}): {verdict}")
    return "\n".join(lines)
