"""One module per debate phase; planner nodes build prompts, worker nodes call models."""

from nodes.clarify import clarify, collect_answers
from nodes.critique import critique, plan_critiques
from nodes.propose import plan_proposals, propose
from nodes.refine import plan_refinements, refine
from nodes.setup import setup
from nodes.summarize import SummarizationAborted, plan_round, summarize
from nodes.synthesize import JudgeSolution, render_solution, synthesize

__all__ = [
    "JudgeSolution",
    "SummarizationAborted",
    "clarify",
    "collect_answers",
    "critique",
    "plan_critiques",
    "plan_proposals",
    "plan_refinements",
    "plan_round",
    "propose",
    "refine",
    "render_solution",
    "setup",
    "summarize",
    "synthesize",
]
