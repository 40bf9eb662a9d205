"""One module per debate phase; each node plans its calls, runs them as tasks and applies the replies."""

from debate_engine.nodes.assess import assess
from debate_engine.nodes.clarify import clarify
from debate_engine.nodes.critique import critique
from debate_engine.nodes.moderate import moderate
from debate_engine.nodes.propose import propose
from debate_engine.nodes.refine import refine
from debate_engine.nodes.setup import setup
from debate_engine.nodes.solution import JudgeSolution
from debate_engine.nodes.summarize import SummarizationAborted, summarize_node
from debate_engine.nodes.synthesize import render_solution, synthesize
from debate_engine.nodes.turn import turn

__all__ = [
    "JudgeSolution",
    "SummarizationAborted",
    "assess",
    "clarify",
    "critique",
    "moderate",
    "propose",
    "refine",
    "render_solution",
    "setup",
    "summarize_node",
    "synthesize",
    "turn",
]
