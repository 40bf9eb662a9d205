"""One parser for structured answers: a tool call's arguments or JSON in the reply's text, leniently.

Large models return a clean tool call that LangChain has already parsed. Small
ones break it in known ways: arguments wrapped in a code fence or prose, a
trailing comma, the JSON written as text instead of a tool call. Each is
recovered here the same way, then validated against the schema; what still
does not validate is a rejected answer, never a guess.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def parse_structured(schema: type[BaseModel], message: Any, parsed: Any = None) -> BaseModel | None:
    """Return the schema's instance from ``message``: LangChain's parse if it succeeded, else the lenient one."""
    if isinstance(parsed, schema):
        return parsed
    for candidate in _candidates(message):
        try:
            return schema.model_validate(candidate)
        except ValidationError:
            continue
    return None


def _raw_texts(message: Any) -> list[str]:
    """Return the raw strings a structured answer may be in: unparsed tool-call arguments, then the reply's text."""
    raws = [call.get("args") for call in getattr(message, "invalid_tool_calls", None) or []]
    kwargs = getattr(message, "additional_kwargs", None) or {}
    raws += [(c.get("function") or {}).get("arguments") for c in kwargs.get("tool_calls") or []]
    raws.append(getattr(message, "text", ""))
    return [r for r in raws if isinstance(r, str) and r.strip()]


def _candidates(message: Any) -> list[Any]:
    """Every object the message may hold: parsed tool calls, raw tool-call arguments, then its text."""
    out: list[Any] = [call.get("args") for call in getattr(message, "tool_calls", None) or []]
    for raw in _raw_texts(message):
        if raw:
            found = json_object(raw)
            if found is not None:
                out.append(found)
    return [c for c in out if isinstance(c, dict)]


def looks_cut(message: Any) -> bool:
    """Whether a structured answer stops inside its JSON: cut at the output limit, whatever ``finish_reason`` says.

    llama.cpp reports a tool call cut at ``max_tokens`` as ``finish_reason: "tool_calls"``.
    """
    return any(unclosed(raw) for raw in _raw_texts(message))


def unclosed(raw: str) -> bool:
    """Whether ``raw`` opens a JSON object it never closes."""
    return "{" in raw and _closing(raw, raw.index("{")) is None


def json_object(text: str) -> dict[str, Any] | None:
    """Return the first JSON object in ``text``: fenced or bare, a trailing comma forgiven."""
    for body in [*_FENCE.findall(text), text]:
        start = body.find("{")
        while start != -1:
            end = _closing(body, start)
            if end is None:
                break
            snippet = body[start : end + 1]
            for attempt in (snippet, _TRAILING_COMMA.sub(r"\1", snippet)):
                try:
                    value = json.loads(attempt)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    return value
            start = body.find("{", start + 1)
    return None


def _closing(text: str, start: int) -> int | None:
    """Return the index of the brace that closes the one at ``start`` (strings and escapes respected)."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None
