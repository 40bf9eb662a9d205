"""The tasks a comparison asks: a JSONL file of known-answer questions, or a seeded built-in generator.

A task is ``id``, ``question``, ``answer`` and a ``kind`` that says how an
answer is compared: ``number`` (the first number of the answer, by its exact value:
``42`` and ``42.0`` alike, ``4,200``, ``4200`` and ``4.2e3`` too, and ``−42`` is ``-42``), ``choice`` (one of ``choices``, case aside) or
``exact`` (the text, case and spacing aside). A bad file is the user's
mistake: the message names the line and what to fix.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from debate_engine.calls.numbers import first_number, plain
from debate_engine.errors import InputError

KINDS = ("number", "choice", "exact")
BUILTIN = "builtin:arithmetic"
BUILTIN_DEFAULT = 20
BUILTIN_SEED = 2023
"""The generator's seed: the same N always gives the same tasks."""


@dataclass(frozen=True)
class Task:
    """One known-answer question."""

    id: str
    question: str
    answer: str
    kind: str = "exact"
    choices: tuple[str, ...] = ()


def load_tasks(source: str) -> list[Task]:
    """Return the tasks of ``source``: ``builtin:arithmetic[:N]`` or a JSONL file."""
    if source.startswith("builtin:"):
        return builtin_tasks(source)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise InputError(
            f"TASKS {source}: cannot read it ({getattr(exc, 'strerror', None) or exc}); give a JSONL "
            f"file or {BUILTIN}[:N]"
        ) from None
    except UnicodeDecodeError:
        raise InputError(f"TASKS {source}: not UTF-8 text; save it as UTF-8 JSONL") from None
    tasks = [_task(source, n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not tasks:
        raise InputError(
            f"TASKS {source}: the file is empty; write one JSON task per line: "
            '{"id": "t1", "question": "...", "answer": "..."}'
        )
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise InputError(
                f"TASKS {source}: id {task.id!r} is used twice; give every task its own id"
            )
        seen.add(task.id)
    return tasks


def _task(source: str, n: int, line: str) -> Task:
    """Return the task on line ``n``, checked field by field."""
    where = f"TASKS {source} line {n}"
    try:
        row: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: not JSON ({exc.msg}); write one JSON object per line (JSONL)"
        ) from None
    if not isinstance(row, dict):
        raise InputError(
            f'{where}: not a JSON object; write {{"id": ..., "question": ..., "answer": ...}}'
        )
    for key in ("question", "answer"):
        if row.get(key) is None or not str(row[key]).strip():
            raise InputError(
                f"{where}: missing {key!r}; every task needs a question and its answer"
            )
    kind = row.get("kind", "exact")
    if kind not in KINDS:
        raise InputError(f"{where}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    choices = tuple(str(c) for c in row.get("choices") or ())
    if kind == "choice" and not choices:
        raise InputError(f"{where}: kind 'choice' needs a list of 'choices'")
    if kind == "number" and normalise(str(row["answer"]), kind) is None:
        raise InputError(
            f"{where}: answer {row['answer']!r} is not a number; fix it or use kind 'exact'"
        )
    return Task(
        id=str(row.get("id") or n),
        question=str(row["question"]).strip(),
        answer=str(row["answer"]),
        kind=kind,
        choices=choices,
    )


def builtin_tasks(source: str) -> list[Task]:
    """``builtin:arithmetic[:N]``: N Du-style expressions ``a+b*c+d-e*f`` of two-digit numbers, seeded."""
    name, _, count = source.partition(":")[2].partition(":")
    if f"builtin:{name}" != BUILTIN or (
        count and not (count.isdecimal() and 1 <= int(count) <= 100_000)
    ):
        raise InputError(
            f"TASKS {source}: unknown built-in; use {BUILTIN} or {BUILTIN}:N with N from 1 to 100000"
        )
    rng = random.Random(BUILTIN_SEED)
    tasks = []
    for i in range(int(count or BUILTIN_DEFAULT)):
        a, b, c, d, e, f = (rng.randint(10, 99) for _ in range(6))
        question = f"What is the result of {a}+{b}*{c}+{d}-{e}*{f}? Answer with the number only."
        tasks.append(
            Task(
                id=f"arithmetic-{i + 1}",
                question=question,
                answer=str(a + b * c + d - e * f),
                kind="number",
            )
        )
    return tasks


def normalise(answer: str | None, kind: str) -> str | None:
    """Return the answer as compared: a number by its exact value (the debate's agreement key reads it the same
    way), a choice or text case and spacing aside (None: none given)."""
    if kind == "number":
        return first_number(answer)
    return plain(answer) or None


def is_correct(task: Task, answer: str | None) -> bool:
    """Return True when ``answer`` is the task's answer, compared by its kind."""
    given = normalise(answer, task.kind)
    return given is not None and given == normalise(task.answer, task.kind)
