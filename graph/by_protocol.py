"""Which compiled graph runs a debate: chosen by its context or its protocol, or read from a stored debate.

Every entry point that runs or reads a stored debate (the command line, the
viewer, the job queue, the measuring tools) picks its graph here, so the
command line and the viewer share it without importing each other. Only the
graph chosen is imported and built.
"""

from __future__ import annotations

from typing import Any

from debate_engine.config.context import RoundtableContext


def graph_for(context_or_protocol: Any, saver: Any) -> Any:
    """Return the phase debate, the roundtable or a sample (``debate compare``'s single and vote), compiled on ``saver``."""
    if context_or_protocol == "sample":
        from debate_engine.graph.sample import compile_sample  # start-up: one graph per run

        return compile_sample(checkpointer=saver)
    if isinstance(context_or_protocol, RoundtableContext) or context_or_protocol == "roundtable":
        from debate_engine.graph.roundtable import compile_roundtable  # start-up: one graph per run

        return compile_roundtable(checkpointer=saver)
    from debate_engine.graph.builder import compile_debate  # start-up: one graph per run

    return compile_debate(checkpointer=saver)


def protocol_of(values: dict[str, Any]) -> str:
    """Which graph a stored debate belongs to: its settings say, or (before setup) its input's settings."""
    return str(
        (values.get("settings") or {}).get("protocol")
        or (values.get("context") or {}).get("protocol")
        or "phases"
    )
