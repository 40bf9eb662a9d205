"""The three-tier memory engine: transcript records, summaries and working views."""

from memory.budget import Budget, BudgetSplit, View, build_view, make_budget, render_turn
from memory.facets import clip_at_boundary, merge_facets, render_summary
from memory.messages import find_safe_split, make_pre_model_hook, summarize_messages
from memory.perspective import (
    JUDGE_ID,
    agent_perspective,
    judge_perspective,
    latest_summary,
    perspective_for,
    uncovered,
)
from memory.records import SummaryFacets, SummaryRecord, Turn, TurnView, Usage
from memory.settings import SummarizationSettings
from memory.strategies import STRATEGIES, Plan, Strategy, get_strategy
from memory.summarizer import ModelInfo, StructuredSummary, SummaryRequest, is_transport_error, summarize
from memory.tokens import count_messages, count_tokens, truncate_to_tokens
from memory.triggers import Decision, decide, verbatim_limit

__all__ = [
    "JUDGE_ID",
    "STRATEGIES",
    "Budget",
    "BudgetSplit",
    "Decision",
    "ModelInfo",
    "Plan",
    "Strategy",
    "StructuredSummary",
    "SummarizationSettings",
    "SummaryFacets",
    "SummaryRecord",
    "SummaryRequest",
    "Turn",
    "TurnView",
    "Usage",
    "View",
    "agent_perspective",
    "build_view",
    "clip_at_boundary",
    "count_messages",
    "count_tokens",
    "decide",
    "find_safe_split",
    "get_strategy",
    "is_transport_error",
    "judge_perspective",
    "latest_summary",
    "make_budget",
    "make_pre_model_hook",
    "merge_facets",
    "perspective_for",
    "render_summary",
    "render_turn",
    "summarize",
    "summarize_messages",
    "truncate_to_tokens",
    "uncovered",
    "verbatim_limit",
]
