"""The roundtable graph: a turn-taking debate of up to 10,000 turns, every speaker in a bounded view.

setup -> [moderate] -> turn -> [moderate] -> turn ... -> synthesize, with a
conditional ``summarize`` that folds the oldest turns into the shared rolling
summary every ``summary_every`` turns (earlier when the recent slice is full).

Every input the roundtable takes carries its settings marked ``protocol:
roundtable``, whatever the caller passed: a roundtable stopped before its
setup finished is then known as one by any process that resumes it.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from debate_engine.graph.builder import compile_graph
from debate_engine.graph.context import Context, RoundtableContext, context_dict
from debate_engine.graph.routing import after_moderate, after_setup_roundtable, after_summarize_roundtable, after_turn
from debate_engine.graph.state import ConversationState, InputState, OutputState
from debate_engine.nodes import moderate, setup, summarize_node, synthesize, turn


def build_roundtable() -> StateGraph[ConversationState, RoundtableContext, InputState, OutputState]:
    """Wire the roundtable's nodes and edges (uncompiled)."""
    builder = StateGraph(
        ConversationState, context_schema=RoundtableContext, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("setup", setup)
    builder.add_node("summarize", summarize_node, input_schema=ConversationState)
    builder.add_node("moderate", moderate, input_schema=ConversationState)
    builder.add_node("turn", turn, input_schema=ConversationState)
    builder.add_node("synthesize", synthesize, input_schema=ConversationState)

    builder.add_edge(START, "setup")
    builder.add_conditional_edges("setup", after_setup_roundtable)
    builder.add_conditional_edges("summarize", after_summarize_roundtable)
    builder.add_conditional_edges("moderate", after_moderate)
    builder.add_conditional_edges("turn", after_turn)
    builder.add_edge("synthesize", END)
    return builder


class RoundtableGraph(CompiledStateGraph[ConversationState, RoundtableContext, InputState, OutputState]):
    """The compiled roundtable, whose inputs say which protocol they start.

    ``invoke`` goes through ``stream`` and ``ainvoke`` (and the server's event
    streams) through ``astream``, so these two see every input.
    """

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangGraph's name
        return super().stream(marked(input, kwargs.get("context")), config, **kwargs)

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangGraph's name
        return super().astream(marked(input, kwargs.get("context")), config, **kwargs)


def marked(given: Any, context: Any) -> Any:
    """A new debate's input with its settings (the caller's, else the run's context) marked as a roundtable.

    Before setup, the input is all the state there is: without the mark a
    resume in a fresh process would take the debate for a phase debate.
    """
    if not isinstance(given, dict) or "problem" not in given:
        return given  # a resume (None) or an answer (Command): the thread already holds its input
    settings = given.get("context")
    if settings is None and isinstance(context, Context):
        settings = context_dict(context)
    elif settings is None:  # a server run hands over the plain dict
        settings = {k: v for k, v in (context if isinstance(context, dict) else {}).items() if v not in (None, "")}
    return {**given, "context": {**settings, "protocol": "roundtable"}}


def compile_roundtable(
    checkpointer: Any = None, store: Any = None, **kwargs: Any
) -> RoundtableGraph:
    """Compile the roundtable with the checkpointer and store a caller passes (in-memory by default).

    ``checkpointer=False`` compiles without one, as ``langgraph dev`` needs.
    """
    compiled = compile_graph(build_roundtable(), "roundtable", checkpointer, store, **kwargs)
    # LangGraph's own copy (``with_config``) rebuilds a graph from its attributes the same way.
    return RoundtableGraph(**{k: v for k, v in vars(compiled).items() if k != "__orig_class__"})


graph = compile_roundtable(checkpointer=False)
"""The module-level graph ``langgraph.json`` serves."""
