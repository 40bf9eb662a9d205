"""The debate engine on LangGraph: state, settings, models, and the compiled graph."""

from graph.builder import build_graph, compile_debate, graph
from graph.context import Context
from graph.state import ConversationState

__all__ = ["Context", "ConversationState", "build_graph", "compile_debate", "graph"]
