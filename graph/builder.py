"""The debate graph, assembled in one place, top to bottom like the debate itself.

setup -> [clarify x N -> collect_answers] -> plan_round -> [summarize x K]
  -> plan_proposals -> propose x N -> plan_critiques -> critique x N(N-1)
  -> plan_refinements -> refine x N -> plan_round -> ... -> synthesize
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.routing import (
    after_plan_critiques,
    after_plan_proposals,
    after_plan_round,
    after_setup,
    after_summaries,
    send_tasks,
)
from graph.state import ConversationState, InputState, OutputState
from nodes import (
    clarify,
    collect_answers,
    critique,
    plan_critiques,
    plan_proposals,
    plan_refinements,
    plan_round,
    propose,
    refine,
    setup,
    summarize,
    synthesize,
)


def build_graph() -> StateGraph[ConversationState, Context, InputState, OutputState]:
    """Wire the debate's nodes and edges (uncompiled)."""
    builder = StateGraph(ConversationState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node(setup)
    builder.add_node(clarify)  # type: ignore[call-overload,arg-type]  # a Send worker's own input
    builder.add_node(collect_answers)
    builder.add_node(plan_round)
    builder.add_node(summarize)  # type: ignore[call-overload,arg-type]  # a Send worker's own input
    builder.add_node(plan_proposals)
    builder.add_node(propose)  # type: ignore[call-overload,arg-type]  # a Send worker's own input
    builder.add_node(plan_critiques)
    builder.add_node(critique)  # type: ignore[call-overload,arg-type]  # a Send worker's own input
    builder.add_node(plan_refinements)
    builder.add_node(refine)  # type: ignore[call-overload,arg-type]  # a Send worker's own input
    builder.add_node(synthesize)

    builder.add_edge(START, "setup")
    builder.add_conditional_edges("setup", after_setup, ["clarify", "plan_round"])
    builder.add_edge("clarify", "collect_answers")
    builder.add_edge("collect_answers", "plan_round")

    builder.add_conditional_edges("plan_round", after_plan_round, ["summarize", "plan_proposals", "synthesize"])
    builder.add_conditional_edges("summarize", after_summaries, ["plan_proposals", "synthesize"])

    builder.add_conditional_edges("plan_proposals", after_plan_proposals, ["propose", "plan_critiques"])
    builder.add_edge("propose", "plan_critiques")
    builder.add_conditional_edges("plan_critiques", after_plan_critiques, ["critique", "plan_refinements"])
    builder.add_edge("critique", "plan_refinements")
    builder.add_conditional_edges("plan_refinements", send_tasks, ["refine"])
    builder.add_edge("refine", "plan_round")

    builder.add_edge("synthesize", END)
    return builder


def compile_debate(
    checkpointer: Any = None, store: Any = None, **kwargs: Any
) -> CompiledStateGraph[ConversationState, Context, InputState, OutputState]:
    """Compile the debate with the checkpointer and store a caller passes (in-memory by default).

    ``checkpointer=False`` compiles without one, as ``langgraph dev`` needs.
    """
    if checkpointer is None:
        from langgraph.checkpoint.memory import InMemorySaver

        checkpointer = InMemorySaver()
    return build_graph().compile(checkpointer=checkpointer or None, store=store, name="debate", **kwargs)


graph = compile_debate(checkpointer=False)
"""The module-level graph ``langgraph.json`` serves: no checkpointer, the server brings its own."""
