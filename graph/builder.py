"""The debate graph, assembled in one place, top to bottom like the debate itself.

setup -> [clarify] -> propose -> critique -> refine -> critique -> refine ... -> synthesize,
with a conditional ``summarize`` before any phase whose speakers' memory is due.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from debate_engine.graph.context import Context
from debate_engine.graph.routing import (
    after_clarify,
    after_critique,
    after_propose,
    after_refine,
    after_setup,
    after_summarize,
)
from debate_engine.graph.state import ConversationState, InputState, OutputState
from debate_engine.nodes import clarify, critique, propose, refine, setup, summarize_node, synthesize

RECURSION_LIMIT = 100_000
"""Steps a run may take: a 10,000-round debate with a summary before every phase fits."""
SYNC_THREADS = 64
"""Calls a phase may run at once under ``invoke`` (a caller's ``max_concurrency`` overrides it)."""


def build_graph() -> StateGraph[ConversationState, Context, InputState, OutputState]:
    """Wire the debate's nodes and edges (uncompiled)."""
    builder = StateGraph(ConversationState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("setup", setup)
    builder.add_node("clarify", clarify, input_schema=ConversationState)
    builder.add_node("summarize", summarize_node, input_schema=ConversationState)
    builder.add_node("propose", propose, input_schema=ConversationState)
    builder.add_node("critique", critique, input_schema=ConversationState)
    builder.add_node("refine", refine, input_schema=ConversationState)
    builder.add_node("synthesize", synthesize, input_schema=ConversationState)

    builder.add_edge(START, "setup")
    builder.add_conditional_edges("setup", after_setup)
    builder.add_conditional_edges("clarify", after_clarify)
    builder.add_conditional_edges("summarize", after_summarize)
    builder.add_conditional_edges("propose", after_propose)
    builder.add_conditional_edges("critique", after_critique)
    builder.add_conditional_edges("refine", after_refine)
    builder.add_edge("synthesize", END)
    return builder


def compile_debate(
    checkpointer: Any = None, store: Any = None, **kwargs: Any
) -> CompiledStateGraph[ConversationState, Context, InputState, OutputState]:
    """Compile the debate with the checkpointer and store a caller passes (in-memory by default).

    ``checkpointer=False`` compiles without one, as ``langgraph dev`` needs.
    """
    return compile_graph(build_graph(), "debate", checkpointer, store, **kwargs)


def compile_graph(builder: StateGraph[Any, Any, Any, Any], name: str, checkpointer: Any, store: Any, **kwargs: Any) -> Any:
    """Compile either protocol's graph the same way: an in-memory saver unless told otherwise, our limits."""
    if checkpointer is None:
        from langgraph.checkpoint.memory import InMemorySaver

        checkpointer = InMemorySaver()
    compiled = builder.compile(checkpointer=checkpointer or None, store=store, name=name, **kwargs)
    # Under `invoke`, a phase's calls run in LangGraph's thread pool, which has about six threads on a
    # small machine unless max_concurrency sizes it: a wide phase would wait for threads, not for models.
    return compiled.with_config(recursion_limit=RECURSION_LIMIT, max_concurrency=SYNC_THREADS)


graph = compile_debate(checkpointer=False)
"""The module-level graph ``langgraph.json`` serves: no checkpointer, the server brings its own."""
