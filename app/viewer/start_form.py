"""The form that starts a debate: the chosen protocol's fields, with their descriptions, ranges and choices.

The fields are read from the context dataclasses (``config.context``), so the
form offers what ``debate run`` and Studio offer, described as they describe
them. Each protocol shows only the settings it reads (the roundtable's turns
and order, escalate's votes and window); a value posted for another
protocol's setting is refused, naming it, never dropped. A setting with a
closed set of values is a choice. A value that does not parse names its field
and keeps what was typed; the settings are then checked as ``debate run``
checks them, and the models are checked to be usable here, before a thread
exists.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from debate_engine.app.store.thread_ids import ThreadIdError, check_thread_id
from debate_engine.config.context import DEFAULT_VOTES, Context, RoundtableContext
from debate_engine.config.outcome import STOP_RULES, SYNTHESIS_METHODS
from debate_engine.config.roundtable_params import ORDERS
from debate_engine.config.settings import RunSettings, is_human
from debate_engine.memory.strategies import STRATEGIES
from debate_engine.providers import local_server
from debate_engine.providers.factory import provider_of

PROTOCOLS = {
    "phases": "phases: propose, critique, refine each round",
    "roundtable": "roundtable: one speaker per turn",
    "escalate": "escalate: the agents vote first, and debate only when they split",
}
"""The protocols a form can start, as the choice names them."""
ROUNDTABLE_ONLY = frozenset(f.name for f in dataclasses.fields(RoundtableContext)) - frozenset(
    f.name for f in dataclasses.fields(Context)
)
ESCALATE_ONLY = frozenset({"votes", "window"})
NOT_ROUNDTABLE = frozenset({"rounds", "clarify", "max_questions"})
"""Settings a roundtable does not read: its turns count it, and it asks no clarifying questions."""
FORM_OWN = frozenset({"problem", "protocol", "thread_id", "show"})
"""The form's inputs that are no setting (``show`` asks for the chosen protocol's fields, starting nothing)."""
CHOICES: dict[str, tuple[str, ...]] = {
    "summary_method": tuple(STRATEGIES),
    "order": ORDERS,
    "stop_rule": STOP_RULES,
    "synthesis_method": SYNTHESIS_METHODS,
}
"""Text settings whose values are a closed set: each is a choice, the empty one meaning the default."""
SWITCH = ("on", "off")
"""The choices of a setting that is on, off, or left to the config file (``bool | None``)."""


@dataclass(frozen=True)
class FormField:
    """One input of the form."""

    name: str
    kind: str
    """``text``, ``int``, ``float``, ``bool`` (a checkbox), ``switch`` (default, on, off) or ``choice``."""
    description: str
    low: float | None = None
    high: float | None = None
    protocols: tuple[str, ...] = tuple(PROTOCOLS)
    """The protocols that read it: the form shows it for these only."""
    choices: tuple[str, ...] = ()
    """A ``switch``'s or a ``choice``'s values, the default (empty) not among them."""
    default: Any = None
    """The context's own value when the field is left empty."""

    @property
    def owner(self) -> str:
        """Return the protocols that read it, in words."""
        return " and ".join(self.protocols)


def _kind(name: str, hint: Any) -> tuple[str | None, tuple[str, ...]]:
    """Return the input kind of a field's type and its choices; None for one a form cannot hold (a mapping)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) else hint
    if typing.get_origin(base) is Literal:
        return "choice", tuple(str(a) for a in typing.get_args(base))
    if base is bool:
        return ("switch", SWITCH) if type(None) in typing.get_args(hint) else ("bool", ())
    if name in CHOICES:
        return "choice", CHOICES[name]
    return {str: "text", int: "int", float: "float"}.get(base), ()


def _range(extras: tuple[Any, ...]) -> tuple[float | None, float | None]:
    """Return the ``ge``/``le`` bounds of a field's ``Annotated[..., Field(...)]``."""
    low = high = None
    for extra in extras:
        for item in getattr(extra, "metadata", []):
            low = getattr(item, "ge", low)
            high = getattr(item, "le", high)
    return low, high


def _protocols(name: str) -> tuple[str, ...]:
    """Return the protocols that read a setting."""
    if name in ROUNDTABLE_ONLY:
        return ("roundtable",)
    if name in ESCALATE_ONLY:
        return ("escalate",)
    if name in NOT_ROUNDTABLE:
        return ("phases", "escalate")
    return tuple(PROTOCOLS)


def form_fields(protocol: str | None = None) -> list[FormField]:
    """Return every context field a form can hold, in the dataclass's order: those ``protocol`` reads, if given."""
    hints = typing.get_type_hints(RoundtableContext, include_extras=True)
    found = []
    for field in dataclasses.fields(RoundtableContext):
        hint = hints[field.name]
        extras: tuple[Any, ...] = ()
        if typing.get_origin(hint) is typing.Annotated:
            hint, *rest = typing.get_args(hint)
            extras = tuple(rest)
        kind, choices = _kind(field.name, hint)
        if kind is None or field.name == "config_file":  # a server-side path is not the browser's
            continue
        protocols = _protocols(field.name)
        if protocol is not None and protocol not in protocols:
            continue
        low, high = _range(extras)
        description = field.metadata.get("description", "")
        found.append(
            FormField(field.name, kind, description, low, high, protocols, choices, field.default)
        )
    return found


class FormErrors(Exception):
    """What is wrong with a submitted form, by field (``""`` for the form as a whole)."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" if k else v for k, v in errors.items()))
        self.errors = errors


def chosen_protocol(form: dict[str, str]) -> str:
    """Return the protocol a form (or an address's ``?protocol=``) asks for; phases when it names none it knows."""
    protocol = form.get("protocol", "")
    return protocol if protocol in PROTOCOLS else "phases"


def _value(field: FormField, text: str) -> Any:
    """Return a submitted value typed as its field wants; ValueError names what would be valid."""
    text = text.strip()
    if field.kind == "bool":
        return text in ("on", "true", "1")
    if field.kind in ("switch", "choice") and text and text not in field.choices:
        raise ValueError(
            f"{text[:40]!r} is not a choice; choose {_either(field.choices)} (or the default)"
        )
    if field.kind == "switch":
        return {"": None, "on": True, "off": False}[text]
    if field.kind == "choice":
        return text or field.default
    if field.kind == "text" or not text:
        return text if field.kind == "text" else None
    try:
        number = int(text) if field.kind == "int" else float(text)
    except ValueError:
        raise ValueError("not a whole number" if field.kind == "int" else "not a number") from None
    if (field.low is not None and number < field.low) or (
        field.high is not None and number > field.high
    ):
        raise ValueError(f"{text} is out of range; give {field.low:g} to {field.high:g}")
    return number


def _either(choices: tuple[str, ...]) -> str:
    """Return choices as ``a, b or c``."""
    return f"{', '.join(choices[:-1])} or {choices[-1]}"


def parse_form(form: dict[str, str]) -> tuple[str, Any]:
    """Return the problem and the context a submitted form asks for; raise FormErrors naming each bad field.

    A thread id typed in the form is checked as the command line checks ``--thread-id``, before a thread is made.
    """
    errors: dict[str, str] = {}
    protocol = form.get("protocol", "phases")
    if protocol not in PROTOCOLS:
        errors["protocol"] = (
            f"{protocol[:40]!r} is not a protocol; choose {_either(tuple(PROTOCOLS))}"
        )
    problem = form.get("problem", "").strip()
    if not problem:
        errors["problem"] = "the problem is empty; write the question to debate"
    thread = form.get("thread_id", "").strip()  # empty: a new id is made
    if thread:
        try:
            check_thread_id(thread)
        except ThreadIdError as exc:
            errors["thread_id"] = str(exc)
    given = _settings(form, chosen_protocol(form), errors)  # an unknown protocol: named above
    if errors:
        raise FormErrors(errors)
    if protocol == "escalate" and given["votes"] is None:
        given["votes"] = DEFAULT_VOTES  # as `debate run --protocol escalate` without --votes
    kind = RoundtableContext if protocol == "roundtable" else Context
    return problem, kind(**given)


def _settings(form: dict[str, str], protocol: str, errors: dict[str, str]) -> dict[str, Any]:
    """Return the settings of ``protocol`` the form gives, adding to ``errors`` what is wrong with them.

    A setting the protocol does not read, given a value, is a mistake named on its field; so is a name
    that is no field of the form. Neither is ever dropped unsaid.
    """
    every = {f.name: f for f in form_fields()}
    for name in sorted(set(form) - set(every) - FORM_OWN):
        errors[name[:60]] = "not a setting this form has (was the form changed?); leave it out"
    given: dict[str, Any] = {}
    for field in every.values():
        if protocol not in field.protocols:
            if form.get(field.name, "").strip():
                errors[field.name] = (
                    f"a setting of the {field.owner} protocol, not of {protocol}: choose "
                    f"{field.owner} as the protocol, or clear it"
                )
            continue
        try:
            given[field.name] = _value(field, form.get(field.name, ""))
        except ValueError as exc:
            errors[field.name] = str(exc)
    return given


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


EMBEDDED = "local"
"""The provider of the embedded model, which runs only where its extra is installed."""


def unusable_model(settings: RunSettings) -> str | None:
    """Return why a seat's model cannot run on this machine (the embedded model not installed), or None.

    ``debate run`` finds it at the first call, after its thread exists; a form that started so would leave a
    dead debate in the list, so the form asks first. An empty model picks the embedded model when no API
    key is set: the message says so.
    """
    seats = [p for p in (*settings["agents"], settings["judge"]) if not is_human(p)]
    local = [p["model"] for p in seats if provider_of(p["model"]) == EMBEDDED]
    if not local:
        return None
    try:
        local_server.gguf_path()
        if importlib.util.find_spec("llama_cpp") is None:
            raise local_server.LocalModelError(
                "llama-cpp-python is not installed; run `pip install -e '.[local]'` "
                "(it compiles, ~7 min once)"
            )
    except local_server.LocalModelError as exc:
        return (
            f"{local[0]} (picked when the model is empty and no API key is set) cannot run here: "
            f"{exc}; give another model, e.g. fake or openai:<name>"
        )
    return None
