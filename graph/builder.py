"""The debate graph, assembled in one place, top to bottom like the debate itself.

setup -> [clarify] -> propose -> critique -> refine -> critique -> refine ... -> synthesize,
with a conditional ``summarize`` before any phase whose speakers' memory is due, and a conditional ``assess``
(the judge's check of the round) after a refinement when the stop rule is ``convergence`` or ``quality``.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from debate_engine.config.context import Context, context_dict, context_of
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
from debate_engine.nodes.routes import after_refine, after_setup, after_summarize, route

RECURSION_LIMIT = 100_000
"""Steps a run may take: a 10,000-round debate with a summary before every phase fits."""
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
    builder.add_node("setup", setup)
    builder.add_node("clarify", clarify, input_schema=ConversationState)
    builder.add_node("summarize", summarize_node, input_schema=ConversationState)
    builder.add_node("propose", propose, input_schema=ConversationState)
    builder.add_node("critique", critique, input_schema=ConversationState)
    builder.add_node("refine", refine, input_schema=ConversationState)
    builder.add_node("assess", assess, input_schema=ConversationState)
    builder.add_node("synthesize", synthesize, input_schema=ConversationState)

    # Where each node may lead: a summary when one is due; the judge early when the spend cap stops the debate.
    builder.add_edge(START, "setup")
    builder.add_conditional_edges("setup", after_setup, ["clarify", "summarize", "propose"])
    builder.add_conditional_edges("clarify", route, ["summarize", "propose", "synthesize"])
    builder.add_conditional_edges(
        "summarize", after_summarize, ["propose", "critique", "refine", "synthesize"]
    )
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


class DebateGraph(CompiledStateGraph[ConversationState, Context, InputState, OutputState]):
    """A compiled debate whose new inputs carry their settings, marked with the protocol.

    Before setup has run, the input is all the state a thread holds: a debate
    stopped there must still resume with its own settings and protocol in a
    fresh process (LangGraph keeps no run's context). ``invoke`` goes through
    ``stream`` and ``ainvoke`` (and the server's runs) through ``astream``.
    """

    protocol = "phases"

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangGraph's name
        kwargs = self._checked(kwargs)
        return super().stream(
            mark_input(input, kwargs.get("context"), self.protocol), config, **kwargs
        )

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangGraph's name
        kwargs = self._checked(kwargs)
        return super().astream(
            mark_input(input, kwargs.get("context"), self.protocol), config, **kwargs
        )

    def _checked(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Return a context given as a dict (the SDK, the server), checked key by key: an unknown key is named."""
        given = kwargs.get("context")
        if isinstance(given, dict):
            marked = {**given, "protocol": self.protocol} if given else {}
            kwargs = {**kwargs, "context": context_of(marked, None) if given else None}
        return kwargs


def mark_input(given: Any, context: Any, protocol: str) -> Any:
    """Return a new debate's input with its settings (the caller's, else the run's context) and its protocol."""
    if not isinstance(given, dict) or "problem" not in given:
        return given  # a resume (None) or an answer (Command): the thread already holds its input
    settings = given.get("context")
    if settings is None and isinstance(context, Context):
        settings = context_dict(context)
    elif settings is None:  # a server run hands over the plain dict
        settings = {
            k: v
            for k, v in (context if isinstance(context, dict) else {}).items()
            if v not in (None, "")
        }
    return {**given, "context": {**settings, "protocol": protocol}}


def compile_debate(checkpointer: Any = None, store: Any = None, **kwargs: Any) -> DebateGraph:
    """Compile the debate with the checkpointer and store a caller passes (in-memory by default).

    ``checkpointer=False`` compiles without one, as ``langgraph dev`` needs.
    """
    return compile_graph(build_graph(), "debate", checkpointer, store, **kwargs)


def compile_graph(
    builder: StateGraph[Any, Any, Any, Any],
    name: str,
    checkpointer: Any,
    store: Any,
    kind: type[DebateGraph] = DebateGraph,
    **kwargs: Any,
) -> Any:
    """Compile either protocol's graph the same way: an in-memory saver unless told otherwise, our limits."""
    if checkpointer is None:
        from langgraph.checkpoint.memory import InMemorySaver

        checkpointer = InMemorySaver()
    compiled = builder.compile(checkpointer=checkpointer or None, store=store, name=name, **kwargs)
    # Under `invoke`, a phase's calls run in LangGraph's thread pool, which has about six threads on a
    # small machine unless max_concurrency sizes it: a wide phase would wait for threads, not for models.
    compiled = compiled.with_config(recursion_limit=RECURSION_LIMIT, max_concurrency=SYNC_THREADS)
    # LangGraph's own copy (``with_config``) rebuilds a graph from its attributes the same way.
    return kind(**{k: v for k, v in vars(compiled).items() if k != "__orig_class__"})


def __getattr__(name: str) -> Any:
    """``graph``, the module-level graph the server serves (no checkpointer: it brings its own), compiled on first use.

    The command line compiles its own graph on its checkpointer: compiling this one too at import cost every
    ``debate run`` a graph build before its first request.
    """
    if name == "graph":
        compiled = globals()["graph"] = compile_debate(checkpointer=False)
        return compiled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
