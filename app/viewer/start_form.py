"""The form that starts a debate: the context's own fields, with their descriptions and ranges.

The fields are read from the context dataclasses (``config.context``), so the
form offers what ``debate run`` and Studio offer, described as they describe
them. A value that does not parse names its field and keeps what was typed;
the settings are then checked as ``debate run`` checks them.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from debate_engine.app.store.thread_ids import ThreadIdError, check_thread_id
from debate_engine.config.context import Context, RoundtableContext

ROUNDTABLE_ONLY = {f.name for f in dataclasses.fields(RoundtableContext)} - {
    f.name for f in dataclasses.fields(Context)
}
PROTOCOLS = ("phases", "roundtable")


@dataclass(frozen=True)
class FormField:
    """One input of the form."""

    name: str
    kind: str
    """``text``, ``int``, ``float``, ``bool`` (a checkbox) or ``choice`` (default, on, off)."""
    description: str
    low: float | None = None
    high: float | None = None
    roundtable: bool = False


def _kind(hint: Any) -> str | None:
    """Return the input kind of a field's type; None for one a form cannot hold (a mapping)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) else hint
    if base is bool:
        return "choice" if type(None) in typing.get_args(hint) else "bool"
    return {str: "text", int: "int", float: "float"}.get(base)


def _range(extras: tuple[Any, ...]) -> tuple[float | None, float | None]:
    """Return the ``ge``/``le`` bounds of a field's ``Annotated[..., Field(...)]``."""
    low = high = None
    for extra in extras:
        for item in getattr(extra, "metadata", []):
            low = getattr(item, "ge", low)
            high = getattr(item, "le", high)
    return low, high


def form_fields() -> list[FormField]:
    """Return every context field a form can hold, in the dataclass's order."""
    hints = typing.get_type_hints(RoundtableContext, include_extras=True)
    found = []
    for field in dataclasses.fields(RoundtableContext):
        hint = hints[field.name]
        extras: tuple[Any, ...] = ()
        if typing.get_origin(hint) is typing.Annotated:
            hint, *rest = typing.get_args(hint)
            extras = tuple(rest)
        kind = _kind(hint)
        if (
            kind is None or field.name == "config_file"
        ):  # a server-side path is not the browser's to name
            continue
        low, high = _range(extras)
        found.append(
            FormField(
                field.name,
                kind,
                field.metadata.get("description", ""),
                low,
                high,
                field.name in ROUNDTABLE_ONLY,
            )
        )
    return found


class FormErrors(Exception):
    """What is wrong with a submitted form, by field (``""`` for the form as a whole)."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" if k else v for k, v in errors.items()))
        self.errors = errors


def _value(field: FormField, text: str) -> Any:
    """Return a submitted value typed as its field wants; ValueError names what would be valid."""
    text = text.strip()
    if field.kind == "bool":
        return text in ("on", "true", "1")
    if field.kind == "choice":
        return {"": None, "on": True, "off": False}[text]
    if field.kind == "text" or not text:
        return text if field.kind == "text" else None
    number = int(text) if field.kind == "int" else float(text)
    if (field.low is not None and number < field.low) or (
        field.high is not None and number > field.high
    ):
        raise ValueError(f"{text} is out of range; give {field.low:g} to {field.high:g}")
    return number


def parse_form(form: dict[str, str]) -> tuple[str, Any]:
    """Return the problem and the context a submitted form asks for; raise FormErrors naming each bad field.

    A thread id typed in the form is checked as the command line checks ``--thread-id``, before a thread is made.
    """
    errors: dict[str, str] = {}
    protocol = form.get("protocol", "phases")
    if protocol not in PROTOCOLS:
        errors["protocol"] = f"{protocol!r} is not a protocol; choose phases or roundtable"
    problem = form.get("problem", "").strip()
    if not problem:
        errors["problem"] = "the problem is empty; write the question to debate"
    thread = form.get("thread_id", "").strip()  # empty: a new id is made
    if thread:
        try:
            check_thread_id(thread)
        except ThreadIdError as exc:
            errors["thread_id"] = str(exc)
    given: dict[str, Any] = {}
    for field in form_fields():
        if field.roundtable and protocol != "roundtable":
            continue
        try:
            given[field.name] = _value(field, form.get(field.name, ""))
        except (ValueError, KeyError) as exc:
            errors[field.name] = (
                str(exc) if isinstance(exc, ValueError) and "range" in str(exc) else _wanted(field)
            )
    if errors:
        raise FormErrors(errors)
    kind = RoundtableContext if protocol == "roundtable" else Context
    return problem, kind(**given)


def _wanted(field: FormField) -> str:
    """Return what a field takes, in words."""
    return {
        "int": "not a whole number",
        "float": "not a number",
        "choice": "choose default, on or off",
    }.get(field.kind, "not valid")


PROBLEM_FIELD = re.compile(r"^(?:context\.)?([a-z_]+)")


def field_errors(problems: list[str]) -> dict[str, str]:
    """Return a configuration's problems by the form field each names (``""`` for the others)."""
    names = {f.name for f in form_fields()}
    found: dict[str, str] = {}
    for problem in problems:
        match = PROBLEM_FIELD.match(problem)
        name = match[1] if match and match[1] in names else ""
        found[name] = f"{found[name]}; {problem}" if name in found else problem
    return found
