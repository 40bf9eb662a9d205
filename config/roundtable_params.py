"""The roundtable's parameters: resolved once from its context, with the seed's defaults."""

from __future__ import annotations

from debate_engine.config.context import RoundtableContext
from debate_engine.config.file import ConfigError
from debate_engine.config.settings import AgentProfile, ProtocolParams

DEFAULT_TURNS = 100
DEFAULT_SUMMARY_EVERY = 50
DEFAULT_VIEW = {"system": 2048, "summary": 1024, "recent": 5120}
"""An 8K view: topic and role, the shared rolling summary, the recent turns verbatim."""
ORDERS = ("round-robin", "moderator")


def roundtable_params(context: RoundtableContext) -> ProtocolParams:
    """Return the protocol parameters of a roundtable context (raises ValueError naming a bad order)."""
    order = context.order or "round-robin"
    if order not in ORDERS:
        raise ConfigError([f"order: {order!r} is not an order; use round-robin or moderator"])
    view = {
        "system": context.view_system or DEFAULT_VIEW["system"],
        "summary": context.view_summary or DEFAULT_VIEW["summary"],
        "recent": context.view_recent or DEFAULT_VIEW["recent"],
    }
    return ProtocolParams(
        order="moderator" if order == "moderator" else "round-robin",
        max_turns=context.turns or DEFAULT_TURNS,
        summary_every=context.summary_every or DEFAULT_SUMMARY_EVERY,
        view=view,
        stop_rule="convergence" if order == "moderator" else "max_turns",
    )


def with_view(profile: AgentProfile, view: dict[str, int]) -> AgentProfile:
    """Return a speaker's profile with the roundtable's view: its split, within the model's own window."""
    window = min(profile["context_window"], sum(view.values()) + profile["max_output_tokens"])
    return AgentProfile(**{**profile, "context_window": window, "view_split": dict(view)})
