"""Multi-agent debates on LangGraph: role agents propose, critique and refine; a judge synthesizes.

The public API, imported lazily so that ``debate --help`` stays fast:
``compile_debate``, ``compile_roundtable``, ``Context``, ``RoundtableContext`` and ``ConversationState``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "Context": "debate_engine.config.context",
    "ConversationState": "debate_engine.graph.state",
    "compile_debate": "debate_engine.graph.builder",
    "compile_roundtable": "debate_engine.graph.roundtable",
    "RoundtableContext": "debate_engine.config.context",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'debate_engine' has no attribute {name!r}")
