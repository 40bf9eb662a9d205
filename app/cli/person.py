"""A person's turn at the terminal: show the task and the seat's view, read the answer, hand it back.

The answer is read from stdin (several lines, ended by a line holding only ``.``
or by the end of input), or written in ``$EDITOR`` when it is set. Input that
has ended answers nothing: the question stays pending for ``debate resume``. An answer
that is a JSON object is sent as one, so a person can state a position that
counts in the votes; the debate checks its shape and asks again when it is wrong.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.nodes.human import HUMAN_TURN, PASSED

END = "."
"""A line holding only this ends an answer typed at the terminal."""


def is_person_question(value: Any) -> bool:
    """Whether an interrupt asks a person's turn (the clarifications ask the user otherwise)."""
    return isinstance(value, dict) and value.get("type") == HUMAN_TURN


def answer_turn(question: dict[str, Any]) -> Any:
    """Ask one turn: show it, read the answer (text, or a JSON object), and say how a pass is recorded."""
    show(question)
    editor = os.environ.get("EDITOR", "").strip()
    text = from_editor(editor, question) if editor else from_stdin()
    if (
        text is None
    ):  # nobody is typing (a pipe ran out, a job without a terminal): never pass for them
        raise InputError(
            f"the input ended before {question['seat']}'s answer; the question stays pending: "
            "answer it with `debate resume THREAD` (the thread id is on the run's first line)"
        )
    if not text.strip():
        print(f"{question['seat']} passed: the turn is recorded as {PASSED!r}", file=sys.stderr)
        return ""
    return as_answer(text)


def show(question: dict[str, Any]) -> None:
    """Print the task and the view an agent in the seat would get (stderr: stdout carries the solution)."""
    view = question["view"]
    lines = [
        f"\n=== {question['seat']}, your turn: {question['task']}",
        *(
            [f"Your last answer was not taken: {question['error']}"]
            if question.get("error")
            else []
        ),
        f"--- what a model in your seat is shown ({view['prompt_tokens']} tokens) ---",
        view["system"],
        "---",
        view["user"],
        "---",
        f"Answer with {question['answer_shape']}.",
        f'End the answer with a line holding only "{END}" (or the end of input); an empty answer passes.',
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)


def from_stdin() -> str | None:
    """Lines up to a line holding only ``.`` or the end of input; None when the input had ended already."""
    lines: list[str] = []
    for line in sys.stdin:
        if line.rstrip("\r\n") == END:
            return "\n".join(lines)
        lines.append(line.rstrip("\r\n"))
    return "\n".join(lines) if lines else None


def from_editor(editor: str, question: dict[str, Any]) -> str:
    """Return the answer written in ``$EDITOR``: a file opened with the task as ``#`` lines, which are dropped."""
    header = "\n".join(
        f"# {line}"
        for line in [
            f"{question['seat']}: {question['task']}",
            *(
                [f"Your last answer was not taken: {question['error']}"]
                if question.get("error")
                else []
            ),
            "Lines starting with # are dropped; an empty answer passes.",
        ]
    )
    with tempfile.TemporaryDirectory(prefix="debate-turn-") as folder:
        path = Path(folder) / "answer.md"
        path.write_text(header + "\n", encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(editor), str(path)], check=False)
        except (OSError, ValueError) as exc:
            raise InputError(
                f"$EDITOR {editor!r} could not start ({exc}); fix or unset EDITOR, then `debate "
                "resume` asks the question again (it stays pending)"
            ) from None
        if done.returncode != 0:
            raise InputError(
                f"$EDITOR {editor!r} exited with {done.returncode}; the question stays pending: "
                "`debate resume` asks it again"
            )
        text = path.read_text(encoding="utf-8", errors="replace")
    return "\n".join(line for line in text.splitlines() if not line.startswith("#")).strip()


def as_answer(text: str) -> Any:
    """Return a JSON object as an object (a stated position), anything else as the turn's text."""
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(value, dict):
            return value
    return text
