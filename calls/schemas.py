"""Structured answers a grammar-constrained small model can give, and a large one loses nothing by.

llama.cpp turns a forced tool call's JSON schema into a grammar. The grammar
enforces ``enum``, ``maxItems``, ``maxLength`` and required properties, but not
``minimum``/``maximum``, and it lets a model close the object early when a
field is optional. So every schema the engine sends has every property
required, every array and string bounded, and numbers as an enum; the bounds
scale with the call's output budget, so the whole object fits it.

The bounds are a request to the model, never a filter on its answer: a longer
string or list (a large model on a server without a grammar) fitted the call's
output allowance, was paid for, and is kept whole; only the fields that went
past their bounds are recorded. A number outside its range is clamped, and a
choice outside its choices is dropped (recorded too), so it is never used as
an id.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, PrivateAttr, create_model, model_validator
from pydantic.fields import FieldInfo

from debate_engine.memory.tokens import count_tokens

CHARS_PER_TOKEN = 3
"""Characters of JSON-wrapped text one output token holds, conservatively (English averages about 4)."""
PERCENTS: list[Any] = list(range(0, 101, 10))
"""The confidence a schema offers: steps of 10, which a grammar can enforce as an enum."""
SCORES: list[Any] = list(range(1, 11))
"""A rubric score: 1 to 10, the anchors of ``prompts/phases/rubric.md``."""


def chars_for(max_output_tokens: int, share: float, floor: int = 40) -> int:
    """Characters a field may use: its share of the output budget."""
    return max(floor, int(max_output_tokens * share * CHARS_PER_TOKEN))


def text_field(description: str, chars: int) -> tuple[Any, FieldInfo]:
    """Return a required string of at most ``chars`` characters."""
    return str, Field(
        description=f"{description} At most {chars} characters.",
        json_schema_extra={"maxLength": chars},
    )


def list_field(description: str, count: int, chars: int) -> tuple[Any, FieldInfo]:
    """Return a required list of at most ``count`` strings of at most ``chars`` characters each."""
    return list[str], Field(
        description=f"{description} At most {count} items.",
        json_schema_extra={"maxItems": count, "items": {"type": "string", "maxLength": chars}},
    )


def percent_field(description: str) -> tuple[Any, FieldInfo]:
    """Return a required 0-100 number offered in steps of 10."""
    return int, Field(description=f"{description} 0 to 100.", json_schema_extra={"enum": PERCENTS})


def score_field(description: str) -> tuple[Any, FieldInfo]:
    """Return a required 1-10 rubric score, as an enum (clamped on reading when a model strays)."""
    return int, Field(
        description=f"{description} 1 to 10.", ge=1, le=10, json_schema_extra={"enum": SCORES}
    )


def choice_field(description: str, choices: list[str]) -> tuple[Any, FieldInfo]:
    """Return a required string that must be one of ``choices``."""
    return str, Field(description=description, json_schema_extra={"enum": list(choices)})


class Bounded(BaseModel):
    """A structured answer read leniently: text kept whole, numbers clamped, and the fields past bounds named."""

    _clamped: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _fit(cls, data: Any, handler: Any) -> Any:
        clamped: list[str] = []
        if isinstance(data, dict):
            data = {
                name: _fit_value(cls.model_fields.get(name), name, value, clamped)
                for name, value in data.items()
            }
        answer = handler(data)
        answer._clamped = clamped
        return answer

    @property
    def clamped(self) -> list[str]:
        """The fields whose value went past the schema's bounds (text kept, numbers clamped, choices dropped)."""
        return list(self._clamped)


def _fit_value(field: FieldInfo | None, name: str, value: Any, clamped: list[str]) -> Any:
    extra = field.json_schema_extra if field is not None else None
    bounds: dict[str, Any] = dict(extra) if isinstance(extra, dict) else {}
    if _past_bounds(bounds, value):
        clamped.append(name)
    enum = bounds.get("enum")
    if (
        enum in (PERCENTS, SCORES)
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        return min(enum[-1], max(enum[0], int(value)))
    if enum is not None and isinstance(value, str) and value not in enum:
        return ""  # a sentence where an id was asked: never read as one
    return value


def _past_bounds(bounds: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` breaks the schema's ``maxLength``, ``maxItems`` (or its items') or ``enum``."""
    if isinstance(value, str) and "maxLength" in bounds:
        return len(value) > int(bounds["maxLength"])
    if isinstance(value, list) and "maxItems" in bounds:
        item_limit = int(dict(bounds.get("items") or {}).get("maxLength", 10**9))
        too_long = any(len(str(v)) > item_limit for v in value)
        return len(value) > int(bounds["maxItems"]) or too_long
    enum = bounds.get("enum")
    if (
        enum in (PERCENTS, SCORES)
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        return not enum[0] <= value <= enum[-1]
    return enum is not None and isinstance(value, str) and value not in enum


def answer_schema(name: str, doc: str, **fields: tuple[Any, FieldInfo]) -> type[Bounded]:
    """Return a structured answer with every field required (none has a default)."""
    # create_model's field keywords share their mapping with ``__base__`` and ``__doc__``: mypy checks a
    # spread dict against all of them, so the fields go in as the untyped mapping pydantic reads.
    definitions: dict[str, Any] = dict(fields)
    return create_model(name, __base__=Bounded, __doc__=doc, **definitions)


def schema_problems(schema: dict[str, Any], where: str = "") -> list[str]:
    """Return what a grammar-constrained model could not satisfy: optional properties, unbounded arrays and strings."""
    problems: list[str] = []
    for key, sub in (schema.get("$defs") or {}).items():
        problems += schema_problems(sub, f"$defs.{key}")
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        missing = sorted(set(props) - set(schema.get("required") or []))
        problems += [f"{where}.{m}: optional" for m in missing]
        for key, sub in props.items():
            problems += schema_problems(sub, f"{where}.{key}")
    elif kind == "array":
        if "maxItems" not in schema:
            problems.append(f"{where}: array without maxItems")
        problems += schema_problems(schema.get("items") or {}, f"{where}[]")
    elif kind == "string" and "maxLength" not in schema and "enum" not in schema:
        problems.append(f"{where}: string without maxLength")
    elif kind in ("integer", "number") and "enum" not in schema:
        problems.append(f"{where}: number without an enum (a grammar ignores minimum and maximum)")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key) or []):
            problems += schema_problems(sub, f"{where}.{key}[{i}]")
    return problems


@lru_cache(maxsize=64)
def tool_tokens(schema: type[BaseModel]) -> int:
    """Prompt tokens a schema's tool definition adds to a request (providers bill it with the prompt)."""
    return count_tokens(json.dumps(convert_to_openai_tool(schema)))
