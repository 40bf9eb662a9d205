"""The sample protocol: each agent answers once and the positions vote; no critique, no judge.

setup -> propose -> tally. ``samples`` 1 is the ``single`` protocol, k the
``vote`` protocol (self-consistency): k copies of the first configured agent,
each with its own id so each draws on its own. Every sample is a checkpointed
run like a debate: it resumes, it is counted, and the spend cap holds.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from debate_engine.config.context import Context
from debate_engine.config.settings import seats
from debate_engine.graph.builder import compile_graph
from debate_engine.graph.state import ConversationState, InputState, OutputState
from debate_engine.nodes import propose, setup
from debate_engine.nodes.setup import INTAKE, Intake
from debate_engine.nodes.tally import tally_votes

MAX_SAMPLES = 1000


class SampleInput(InputState):
    """A sample's input: the problem, its settings, and how many answers to draw."""

    samples: NotRequired[int]
    """Independent answers to draw, 1 to 1,000 (default 1): copies of the first configured agent."""


class SampleState(ConversationState):
    """The debate's state, plus the number of answers drawn."""

    samples: NotRequired[int]
    """Independent answers to draw (copies of the first configured agent)."""


def draw(state: SampleState) -> dict[str, Any]:
    """Set up as a debate does, then make the first agent ``samples`` voters with ids of their own."""
    k = int(state.get("samples") or 1)
    if not 1 <= k <= MAX_SAMPLES:
        raise ValueError(f"samples: {k} is out of range; draw 1 to {MAX_SAMPLES} answers")
    update = setup(state)
    voters = seats(update["settings"]["agents"][:1], k)
    update["settings"] = {**update["settings"], "agents": voters, "rounds": 1, "protocol": "sample"}
    update["status"] = {**update["status"], "rounds": 1}
    return update


def counted(state: ConversationState) -> Literal["tally", "__end__"]:
    """Return the vote, unless the spend cap stopped the answers: then the run ends unfinished, to start again later."""
    return "__end__" if state.get("stopped") else "tally"


Sample = CompiledStateGraph[SampleState, Context, SampleInput, OutputState]
"""A compiled sample, as LangGraph compiles it."""


def build_sample() -> StateGraph[SampleState, Context, SampleInput, OutputState]:
    """Wire the sample's nodes (uncompiled)."""
    builder = StateGraph(
        SampleState, context_schema=Context, input_schema=SampleInput, output_schema=OutputState
    )
    builder.add_node(INTAKE, Intake("sample"))
    builder.add_node("setup", draw)
    builder.add_node("propose", propose, input_schema=ConversationState)
    builder.add_node("tally", tally_votes, input_schema=ConversationState)
    builder.add_edge(START, INTAKE)
    builder.add_edge(INTAKE, "setup")
    builder.add_edge("setup", "propose")
    builder.add_conditional_edges("propose", counted, ["tally", END])
    builder.add_edge("tally", END)
    return builder


def compile_sample(checkpointer: Any = None, store: Any = None, **kwargs: Any) -> Sample:
    """Compile the sample protocol like the debate: in-memory saver by default, ``False`` for none."""
    return compile_graph(build_sample(), "sample", checkpointer, store, **kwargs)


graph = compile_sample(checkpointer=False)
"""The module-level graph a server may serve (no checkpointer)."""
