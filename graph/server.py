"""The graphs ``langgraph dev`` serves, as factories that see each run's context whole.

The server drops context keys its schema does not list before a graph sees
them (a debug log line at most), so a typo such as ``round: 1`` would run a
3-round debate in silence. Only a graph factory is handed the context as the
caller sent it: these factories refuse an unknown key by name, then serve the
one compiled graph of their protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from debate_engine.config.context import Context, RoundtableContext, context_of
from debate_engine.graph.builder import Debate
from debate_engine.graph.builder import graph as debate_graph
from debate_engine.graph.roundtable import Roundtable
from debate_engine.graph.roundtable import graph as roundtable_graph

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime


def _check(runtime: Any, protocol: str) -> None:
    given = getattr(runtime, "context", None)
    if isinstance(given, dict) and given:
        context_of(
            {**given, "protocol": protocol}, None
        )  # raises ConfigError naming an unknown key
    elif given is not None and not isinstance(given, Context | RoundtableContext | dict):
        raise TypeError(f"context must be an object of settings, not {type(given).__name__}")


def debate(runtime: ServerRuntime[Any]) -> Debate:
    """Return the phase debate, for a run whose context names only its settings."""
    _check(runtime, "phases")
    return cast(Debate, debate_graph)  # the builder compiles it on first use (module __getattr__)


def roundtable(runtime: ServerRuntime[Any]) -> Roundtable:
    """Return the roundtable, for a run whose context names only its settings."""
    _check(runtime, "roundtable")
    return roundtable_graph
