"""A run's context checked against its schema: every wrong type and out-of-range number named at once.

The context may come from anywhere (Studio's form, the SDK, ``langgraph dev``), so nothing is trusted:
numbers are strict (``true`` is not 1), a value nested a thousand deep is named, not a RecursionError.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from debate_engine.config.context import Context, RoundtableContext
from debate_engine.config.file import ConfigError
from debate_engine.config.wording import NOT_A_NUMBER, not_a_number, quoted


def check_context(context: Context) -> tuple[Context, list[str]]:
    """Validate a context against its schema: types and ranges, every problem named at once.

    A dev-server run may send anything; a value of the wrong type ends the check at once.
    """
    problems = _not_numbers(context)
    try:
        checked = TypeAdapter(type(context)).validate_python(dataclasses.asdict(context))
    except ValidationError as exc:
        checked, named = (
            context,
            {p.split(":")[0] for p in problems},
        )  # what strictness refused is named once
        problems += [
            p
            for p in (_problem(type(context), e) for e in exc.errors())
            if p.removeprefix(RANGE).split(":")[0] not in named
        ]
    except RecursionError:
        raise ConfigError(["context: a value is nested too deep to read"]) from None
    except TypeError as exc:
        raise ConfigError([f"context: {exc}"]) from None
    if any(not p.startswith(RANGE) for p in problems):
        raise ConfigError(problems)
    return checked, [p[len(RANGE) :] for p in problems]


def _not_numbers(context: Context) -> list[str]:
    """Numbers, strictly: ``true`` (which lax parsing reads as 1) and ``"3"`` are not numbers."""
    return [
        not_a_number(name, getattr(context, name, None), whole)
        for name, (adapter, whole) in _numeric_fields(type(context).__name__).items()
        if _refused(adapter, getattr(context, name, None))
    ]


def _refused(adapter: TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        return any(e["type"] in NOT_A_NUMBER for e in exc.errors())
    return False


@cache
def _numeric_fields(kind_name: str) -> dict[str, tuple[TypeAdapter[Any], bool]]:
    """Each number field of a context kind with its strict validator, and whether it takes whole numbers only."""
    kind = RoundtableContext if kind_name == RoundtableContext.__name__ else Context
    found = {}
    for name, hint in typing.get_type_hints(kind, include_extras=True).items():
        base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
        kinds = set(typing.get_args(base) or [base]) - {type(None)}
        if kinds and kinds <= {int, float}:
            found[name] = (TypeAdapter(hint, config=ConfigDict(strict=True)), float not in kinds)
    return found


RANGE = "range:"


def _problem(kind: type[Context], error: Any) -> str:
    """One validation error as the user reads it: the field, the value, and what would be valid."""
    name = str(error["loc"][0]) if error["loc"] else "context"
    if error["type"] in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        low, high = _bounds(kind, name)
        return f"{RANGE}{name}: {quoted(error.get('input'))} is out of range; use a number from {low} to {high}"
    return f"{name}: {error['msg']} (got {quoted(error.get('input'))})"


def _bounds(kind: type[Context], name: str) -> tuple[Any, Any]:
    """Return the range a context field's ``Field(ge=..., le=...)`` declares."""
    hint = typing.get_type_hints(kind, include_extras=True)[name]
    found: dict[str, Any] = {}
    for meta in getattr(hint, "__metadata__", ()):
        for item in [meta, *getattr(meta, "metadata", [])]:
            for key in ("ge", "le"):
                if getattr(item, key, None) is not None:
                    found[key] = getattr(item, key)
    return found.get("ge"), found.get("le")
