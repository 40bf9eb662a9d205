"""The tools a debater's calls offer: one list for all of them, so that a provider's prompt cache serves them.

OpenAI and Anthropic put the tool list before the messages in what they cache, so two calls with different
tools share no cached prefix at all. A debater answers with a contribution (proposals, refinements, messages),
in prose (critiques) and with a summary of its history; every one of those calls offers both structured forms,
and says which it wants (``tool_choice``: that tool, or none for prose).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache

from pydantic import BaseModel

from debate_engine.calls.schemas import CHARS_PER_TOKEN, Bounded, answer_schema, chars_for, list_field, text_field
from debate_engine.config.settings import AgentProfile, is_human
from debate_engine.memory import JUDGE_ID, StructuredSummary, count_tokens
from debate_engine.memory.facets import FACET_CAPS
from debate_engine.nodes.positions import contribution_schema
from debate_engine.nodes.schedule import TABLE_ID

DEBATER_CALLS = frozenset({"proposal", "critique", "refinement", "message"})
"""The turns whose calls offer the debater's tools (its summaries do too)."""


@lru_cache(maxsize=32)
def summary_schema(max_output_tokens: int) -> type[Bounded]:
    """A summary's structured form sized to its output budget: fewer, shorter facet lists when it is small."""
    count = {name: min(cap, max(1, max_output_tokens // 200)) for name, cap in FACET_CAPS.items()}
    item = min(160, max(24, int(max_output_tokens * 0.3 * CHARS_PER_TOKEN / sum(count.values()))))
    return answer_schema(
        "StructuredSummary", StructuredSummary.__doc__ or "",
        narrative=text_field(str(StructuredSummary.model_fields["narrative"].description),
                             chars_for(max_output_tokens, 0.6)),
        **{name: list_field(str(StructuredSummary.model_fields[name].description), n, item)
           for name, n in count.items()},
    )


@lru_cache(maxsize=64)
def _tokens(schema: type[BaseModel]) -> int:
    return count_tokens(json.dumps(schema.model_json_schema()))


def schema_tokens(schemas: Iterable[type[BaseModel]]) -> int:
    """Prompt tokens the tools' definitions add to a request, about as a provider bills them."""
    return sum(_tokens(schema) for schema in schemas)


def toolset(profile: AgentProfile) -> tuple[type[Bounded], ...]:
    """Every tool a debater's calls offer (empty for the judge, the roundtable's chair and a person)."""
    if profile["id"] in (JUDGE_ID, TABLE_ID) or is_human(profile):
        return ()
    size = profile["max_output_tokens"]
    return contribution_schema(size), summary_schema(size)
