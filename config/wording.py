"""How a config problem reaches a person: a value quoted short, a typo with its nearest key, one server log line.

A message quotes what the user gave, which may be a pasted document or a value nested a thousand deep: every
quote is cut to one readable line. Under ``langgraph dev`` the refusal is one log line, not two tracebacks.
"""

from __future__ import annotations

import difflib
import json
import logging
import reprlib
from typing import Any

from debate_engine.providers.factory import ModelConfigError, parse_spec

_QUOTE = reprlib.Repr()
vars(_QUOTE).update(maxstring=80, maxother=80, maxlevel=3, maxlist=6, maxdict=4)


def quoted(value: Any) -> str:
    """``value`` in one readable line: cut to ~80 characters and 3 levels (a pasted document, a value nested 1,000
    deep), JSON's ``true``, ``false`` and ``null`` spelled as the file spells them."""
    return json.dumps(value) if value is None or isinstance(value, bool) else _QUOTE.repr(value)


def unknown_key(where: str, key: str, valid: list[str]) -> str:
    """Return the message for a key that is not in the schema, with the nearest valid one."""
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}?" if near else f"valid keys: {', '.join(sorted(valid))}"
    return f"{where}: unknown key {quoted(key)}; {hint}"


NOT_A_NUMBER = (
    "int_type",
    "float_type",
    "int_parsing",
    "float_parsing",
    "int_from_float",
)  # pydantic's


def not_a_number(field: str, value: Any, whole: bool) -> str:
    """Return the message for a value where a number belongs: ``true`` and ``"3"`` are not numbers."""
    kind = "whole number" if whole else "number"
    how = "without quotes" if isinstance(value, str) else "as digits"
    return (
        f"{field}: {quoted(value)} is not a {kind}; write one {how}, e.g. {'3' if whole else '0.5'}"
    )


class _OneLine(logging.Filter):
    """Under ``langgraph dev``, a run refused for its settings logs one line, not two tracebacks: langgraph-api
    logs a failed run twice with its traceback, and a ConfigError's message (the client's too) names every problem."""

    def filter(self, record: logging.LogRecord) -> bool:
        event = (
            record.msg if isinstance(record.msg, dict) else {}
        )  # structlog hands over its event dict
        if "ConfigError" not in str(event.get("event", "")):
            return True
        event.pop("exception", None)
        event["event"] = "; ".join(str(event["event"]).splitlines())
        return not str(event["event"]).startswith(
            "Run encountered an error"
        )  # "Background run failed" follows


logging.getLogger("langgraph_api.worker").addFilter(_OneLine())


def spec_problems(where: str, spec: str) -> list[str]:
    """Return what is wrong with a model spec (none: it names a model the factory can make)."""
    if not spec.strip():
        return [f"{where}: empty; name a model, or drop it"]
    try:
        parse_spec(spec)
    except ModelConfigError as exc:
        return [f"{where}: {exc}"]
    return []
