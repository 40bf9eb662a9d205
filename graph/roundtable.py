"""The roundtable graph: a turn-taking debate of up to 10,000 turns, every speaker in a bounded view.

setup -> [moderate] -> turn -> [moderate] -> turn ... -> synthesize, with a
conditional ``summarize`` that folds the oldest turns into the shared rolling
summary every ``summary_every`` turns (earlier when the recent slice is full).

Its first node, ``intake``, keeps every new input's settings marked
``protocol: roundtable``: a roundtable stopped before its setup finished is
known as one by any process that resumes it.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from debate_engine.config.context import RoundtableContext
from debate_engine.graph.builder import compile_graph
from debate_engine.graph.state import ConversationState, InputState, OutputState
from debate_engine.nodes import moderate, setup, summarize_node, synthesize, turn
from debate_engine.nodes.routes import after_summarize, route
from debate_engine.nodes.setup import INTAKE, Intake

Roundtable = CompiledStateGraph[ConversationState, RoundtableContext, InputState, OutputState]
"""A compiled roundtable, as LangGraph compiles it."""


def build_roundtable() -> StateGraph[ConversationState, RoundtableContext, InputState, OutputState]:
    """Wire the roundtable's nodes and edges (uncompiled)."""
    builder = StateGraph(
        ConversationState,
        context_schema=RoundtableContext,
        input_schema=InputState,
        output_schema=OutputState,
    )
    builder.add_node(INTAKE, Intake("roundtable"))
    builder.add_node("setup", setup, input_schema=ConversationState)
    builder.add_node("summarize", summarize_node, input_schema=ConversationState)
    builder.add_node("moderate", moderate, input_schema=ConversationState)
    builder.add_node("turn", turn, input_schema=ConversationState)
    builder.add_node("synthesize", synthesize, input_schema=ConversationState)

    builder.add_edge(START, INTAKE)
    builder.add_edge(INTAKE, "setup")
    builder.add_conditional_edges("setup", route, ["summarize", "moderate", "turn"])
    builder.add_conditional_edges("summarize", after_summarize, ["moderate", "turn", "synthesize"])
    builder.add_conditional_edges(
        "moderate", route, ["summarize", "turn", "synthesize"]
    )  # the judge on convergence
    builder.add_conditional_edges("turn", route, ["summarize", "moderate", "turn", "synthesize"])
    builder.add_edge("synthesize", END)
    return builder


def compile_roundtable(checkpointer: Any = None, store: Any = None, **kwargs: Any) -> Roundtable:
    """Compile the roundtable with the checkpointer and store a caller passes (in-memory by default).

    ``checkpointer=False`` compiles without one, as ``langgraph dev`` needs.
    """
    return compile_graph(build_roundtable(), "roundtable", checkpointer, store, **kwargs)


graph = compile_roundtable(checkpointer=False)
"""The module-level graph ``langgraph.json`` serves."""
