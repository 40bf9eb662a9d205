"""Structured answers as tools: the summary's form, and the prompt tokens a tool's definition adds.

Providers bill a tool's definition as prompt tokens, and cache it before the messages: the spend cap's reserves
count it. (An agent's calls sending one shared tool list would share a cached prefix across kinds of call; at
about 750 tokens of definitions on every call that costs more than it saves: ``bench/cache.py``.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache

from pydantic import BaseModel

from debate_engine.calls.schemas import CHARS_PER_TOKEN, Bounded, answer_schema, chars_for, list_field, text_field
from debate_engine.memory import StructuredSummary, count_tokens
from debate_engine.memory.facets import FACET_CAPS


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
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return count_tokens(json.dumps(convert_to_openai_tool(schema)))  # as the request sends it


def schema_tokens(schemas: Iterable[type[BaseModel]]) -> int:
    """Prompt tokens the tools' definitions add to a request, about as a provider bills them."""
    return sum(_tokens(schema) for schema in schemas)
