"""The debate graph, assembled in one place, top to bottom like the debate itself.

setup -> [clarify] -> propose -> critique -> refine -> critique -> refine ... -> synthesize,
with a conditional ``summarize`` before any phase whose speakers' memory is due, and a conditional ``assess``
(the judge's check of the round) after a refinement when the stop rule is ``convergence`` or ``quality``.
An escalate debate (``votes`` set) votes instead of proposing: setup -> vote [-> vote ...] -> settle when a
window of the vote agrees (no judge), else on to critique with the votes as round 1's proposals.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.typing import ContextT, InputT, OutputT, StateT

from debate_engine.config.context import Context
from debate_engine.graph.state import ConversationState, InputState, OutputState
from debate_engine.nodes import (
    assess,
    clarify,
    critique,
    propose,
    refine,
    setup,
    summarize_node,
    synthesize,
)
from debate_engine.nodes.routes import after_refine, after_setup, after_summarize, after_vote, route
from debate_engine.nodes.setup import INTAKE, Intake
from debate_engine.nodes.vote import settle, vote

RECURSION_LIMIT = 100_000
"""Steps a run may take: a 10,000-round debate with a summary before every phase fits."""
Debate = CompiledStateGraph[ConversationState, Context, InputState, OutputState]
"""A compiled debate, as LangGraph compiles it: its first node, ``intake``, keeps each new input's settings."""
SYNC_THREADS = 64
"""Calls a phase may run at once under ``invoke`` (a caller's ``max_concurrency`` overrides it)."""


def build_graph() -> StateGraph[ConversationState, Context, InputState, OutputState]:
    """Wire the debate's nodes and edges (uncompiled)."""
    builder = StateGraph(
        ConversationState,
        context_schema=Context,
        input_schema=InputState,
        output_schema=OutputState,
    )
    builder.add_node(INTAKE, Intake("phases"))
    builder.add_node("setup", setup, input_schema=ConversationState)
    builder.add_node("clarify", clarify, input_schema=ConversationState)
    builder.add_node("summarize", summarize_node, input_schema=ConversationState)
    builder.add_node("vote", vote, input_schema=ConversationState)
    builder.add_node("settle", settle, input_schema=ConversationState)
    builder.add_node("propose", propose, input_schema=ConversationState)
    builder.add_node("critique", critique, input_schema=ConversationState)
    builder.add_node("refine", refine, input_schema=ConversationState)
    builder.add_node("assess", assess, input_schema=ConversationState)
    builder.add_node("synthesize", synthesize, input_schema=ConversationState)

    # Where each node may lead: a summary when one is due; the judge early when the spend cap stops the debate.
    builder.add_edge(START, INTAKE)
    builder.add_edge(INTAKE, "setup")
    builder.add_conditional_edges("setup", after_setup, ["clarify", "summarize", "vote", "propose"])
    builder.add_conditional_edges("clarify", route, ["summarize", "vote", "propose", "synthesize"])
    builder.add_conditional_edges(
        "summarize", after_summarize, ["vote", "propose", "critique", "refine", "synthesize"]
    )
    builder.add_conditional_edges(
        "vote", after_vote, ["vote", "settle", "summarize", "critique", "refine", "synthesize"]
    )
    builder.add_edge("settle", END)
    builder.add_conditional_edges(
        "propose", route, ["summarize", "critique", "refine", "synthesize"]
    )
    builder.add_conditional_edges("critique", route, ["summarize", "refine", "synthesize"])
    builder.add_conditional_edges(
        "refine",
        after_refine,
        ["assess", "summarize", "propose", "critique", "refine", "synthesize"],
    )
    builder.add_conditional_edges(
        "assess", route, ["summarize", "propose", "critique", "refine", "synthesize"]
    )
    builder.add_edge("synthesize", END)
    return builder


def compile_debate(checkpointer: Any = None, store: Any = None, **kwargs: Any) -> Debate:
    """Compile the debate with the checkpointer and store a caller passes (in-memory by default).

    ``checkpointer=False`` compiles without one, as ``langgraph dev`` needs.
    """
    return compile_graph(build_graph(), "debate", checkpointer, store, **kwargs)


def compile_graph(
    builder: StateGraph[StateT, ContextT, InputT, OutputT],
    name: str,
    checkpointer: Any,
    store: Any,
    **kwargs: Any,
) -> CompiledStateGraph[StateT, ContextT, InputT, OutputT]:
    """Compile any protocol's graph the same way: an in-memory saver unless told otherwise, our limits."""
    if checkpointer is None:
        checkpointer = InMemorySaver()
    compiled = builder.compile(checkpointer=checkpointer or None, store=store, name=name, **kwargs)
    # Under `invoke`, a phase's calls run in LangGraph's thread pool, which has about six threads on a
    # small machine unless max_concurrency sizes it: a wide phase would wait for threads, not for models.
    return compiled.with_config(recursion_limit=RECURSION_LIMIT, max_concurrency=SYNC_THREADS)


def __getattr__(name: str) -> Any:
    """``graph``, the module-level graph the server serves (no checkpointer: it brings its own), compiled on first use.

    The command line compiles its own graph on its checkpointer: compiling this one too at import cost every
    ``debate run`` a graph build before its first request.
    """
    if name == "graph":
        compiled = globals()["graph"] = compile_debate(checkpointer=False)
        return compiled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
