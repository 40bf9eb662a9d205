"""A person's turn: ask it with ``interrupt()`` inside the call's task, and read the answer back.

The question carries what the person needs to write the turn: the task, the
problem, and the view an agent in that seat would get (the same prompt, in the
same budget; in an anonymous debate every other agent, the target too, by its
letter). It is asked inside the task, so the agents' calls of the same
phase run meanwhile and are checkpointed; the answer then becomes the task's
result like a model's reply. An answer of the wrong shape is never taken:
the question is asked again with an ``error`` naming the expected shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.types import interrupt

from debate_engine.nodes.positions import POSITION_FIELDS, POSITION_KINDS

if TYPE_CHECKING:
    from debate_engine.nodes.calls import Call

HUMAN_TURN = "human_turn"
"""The ``type`` of a person's question, beside the clarifications' ``questions``."""
PASSED = "(passed)"
"""What a turn says when the person gave an empty answer: the seat passed, and the debate goes on."""
TEXT_SHAPE = 'a string (your text; an empty string passes the turn), or an object {"text": "..."}'
POSITION_SHAPE = (
    'a string (your text; an empty string passes the turn), or an object {"text": "...", '
    '"position": "one line", "reason": "one sentence", "confidence": 0-100, "answer": "short"} '
    "to state a position that counts in the votes (position required with the others; "
    "reason, confidence and answer optional)"
)


class WrongShape(ValueError):
    """A resume value that is not an answer: its message names the expected shape."""


def task_text(kind: str, round_no: int, target: str | None) -> str:
    """Return what the person is asked to write, in the words a debater's task would use."""
    tasks = {
        "proposal": f"Propose a solution to the problem (round {round_no}).",
        "critique": f"Critique {target}'s proposal (round {round_no}).",
        "refinement": f"Refine your proposal in answer to the critiques of it (round {round_no}).",
        "message": f"Speak in the roundtable (turn {round_no}); an empty answer passes.",
    }
    return tasks.get(kind, f"Write the {kind} (round {round_no}).")


def question(call: Call, error: str | None = None) -> dict[str, Any]:
    """Return the interrupt's payload: the task, the problem, the seat's view and the answer's shape."""
    asked: dict[str, Any] = {
        "type": HUMAN_TURN,
        "seat": call.agent["id"],
        "name": call.agent["name"],
        "kind": call.kind,
        "round": call.round,
        "target": call.shown_target or call.target,  # by its letter in an anonymous debate
        "task": task_text(call.kind, call.round, call.shown_target or call.target),
        "problem": call.problem,
        "view": {
            "system": call.system,
            "user": call.user,
            "prompt_tokens": call.view["prompt_tokens"],
        },
        "answer_shape": POSITION_SHAPE if call.kind in POSITION_KINDS else TEXT_SHAPE,
    }
    return {**asked, "error": error} if error else asked


def ask_person(call: Call) -> tuple[str, dict[str, Any] | None]:
    """Pause the run until the person answers in the right shape; the text and the position stated, if any."""
    error = None
    while True:
        try:
            return read_answer(interrupt(question(call, error)), call.kind)
        except WrongShape as exc:
            error = str(exc)


def read_answer(value: Any, kind: str) -> tuple[str, dict[str, Any] | None]:
    """Return the text of an answer (``PASSED`` when empty) and its position; raise WrongShape for anything else."""
    shape = POSITION_SHAPE if kind in POSITION_KINDS else TEXT_SHAPE
    if isinstance(value, str):
        return value.strip() or PASSED, None
    if not isinstance(value, dict):
        raise WrongShape(f"the answer is of type {type(value).__name__}; send {shape}")
    allowed = ("text", *POSITION_FIELDS) if kind in POSITION_KINDS else ("text",)
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise WrongShape(
            f"the answer has {', '.join(unknown)[:200]}, which a {kind} does not take; send {shape}"
        )
    if not isinstance(value.get("text", ""), str):
        raise WrongShape(f"the answer's text is not a string; send {shape}")
    position = _position(value, shape)
    text = str(value.get("text", "")).strip()
    return text or (f"Position: {position['position']}" if position else PASSED), position


def _position(value: dict[str, Any], shape: str) -> dict[str, Any] | None:
    """Return the position an answer states (None: it states none), checked field by field."""
    given = {k: value[k] for k in POSITION_FIELDS if value.get(k) not in (None, "")}
    if not given:
        return None
    for key in ("position", "reason", "answer"):
        if key in given and not isinstance(given[key], str):
            raise WrongShape(f"the answer's {key} is not a string; send {shape}")
    confidence = given.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int)
        or not 0 <= confidence <= 100
    ):
        raise WrongShape(
            f"the answer's confidence {str(confidence)[:40]!r} is not a whole number from 0 to 100; "
            f"send {shape}"
        )
    if not str(given.get("position", "")).strip():
        raise WrongShape(
            f"the answer states a reason, confidence or answer but no position; send {shape}"
        )
    return {
        "position": given["position"].strip(),
        "reason": str(given.get("reason", "")).strip(),
        "confidence": confidence,
        "answer": str(given.get("answer", "")).strip(),
    }
