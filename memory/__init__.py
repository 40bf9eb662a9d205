"""The three-tier memory engine: transcript records, summaries and working views."""

from debate_engine.memory.budget import (
    Budget,
    BudgetError,
    BudgetSplit,
    View,
    ViewRequest,
    build_view,
    make_budget,
)
from debate_engine.memory.facets import merge_facets, render_summary
from debate_engine.memory.message_history import (
    find_safe_split,
    make_pre_model_hook,
    summarize_messages,
)
from debate_engine.memory.perspective import (
    JUDGE_ID,
    covered_until,
    latest_summaries,
    perspective,
    sees,
    tail,
)
from debate_engine.memory.planning import Material, should_summarize, summary_material, working_view
from debate_engine.memory.records import (
    SummaryFacets,
    SummaryRecord,
    Turn,
    TurnView,
    Usage,
    new_turn,
)
from debate_engine.memory.summarizer import StructuredSummary, summarize
from debate_engine.memory.summary_prompt import Prompt, SummaryJob
from debate_engine.memory.summary_settings import SummarizationSettings
from debate_engine.memory.tokens import count_messages, count_tokens, truncate_to_tokens
from debate_engine.memory.triggers import Decision

__all__ = [
    "JUDGE_ID",
    "Budget",
    "BudgetError",
    "BudgetSplit",
    "Decision",
    "Material",
    "Prompt",
    "StructuredSummary",
    "SummarizationSettings",
    "SummaryFacets",
    "SummaryJob",
    "SummaryRecord",
    "Turn",
    "TurnView",
    "Usage",
    "View",
    "ViewRequest",
    "build_view",
    "count_messages",
    "count_tokens",
    "covered_until",
    "find_safe_split",
    "latest_summaries",
    "make_budget",
    "make_pre_model_hook",
    "merge_facets",
    "new_turn",
    "perspective",
    "render_summary",
    "sees",
    "should_summarize",
    "summarize",
    "summarize_messages",
    "summary_material",
    "tail",
    "truncate_to_tokens",
    "working_view",
]
