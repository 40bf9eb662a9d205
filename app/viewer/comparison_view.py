"""A comparison read back from its threads: each protocol's accuracy and interval, flips, tokens and cost.

``debate compare`` stores every run as a thread ``compare:<id>:<protocol>:<task>:<seed>``;
the figures are made from them by the comparison's own code (``record_of``,
``summarise``). A run's right answer is not stored with it: the built-in
tasks are made again from their seeded generator; runs of a task file are
shown with their spend but unscored.
"""

from __future__ import annotations

import re
from typing import Any

from debate_engine.app.measure.compare.execute import record_of, scored
from debate_engine.app.measure.compare.protocols import PROTOCOLS, Protocol
from debate_engine.app.measure.compare.results import summarise
from debate_engine.app.measure.compare.session import ORDER
from debate_engine.app.measure.compare.tasks import BUILTIN, Task, builtin_tasks

BUILT_IN_ID = re.compile(r"arithmetic-(\d+)")
FLIPS = ("wrong_to_right", "right_to_wrong", "right_to_right", "wrong_to_wrong")


def known_tasks(ids: set[str]) -> dict[str, Task]:
    """Return the built-in tasks among ``ids``, made again by their generator."""
    numbers = [int(m[1]) for i in ids if (m := BUILT_IN_ID.fullmatch(i))]
    if not numbers:
        return {}
    return {t.id: t for t in builtin_tasks(f"{BUILTIN}:{min(max(numbers), 100_000)}")}


def protocol_name(label: str) -> str:
    """Return the protocol a run's label names: ``vote-5`` is the vote, ``roundtable-12`` the roundtable."""
    return label if label in PROTOCOLS else label.rsplit("-", 1)[0]


def parse_thread(name: str, thread: str) -> tuple[str, str, int] | None:
    """Return a comparison thread's protocol label, task id and seed; None for another thread."""
    rest = thread.removeprefix(f"compare:{name}:")
    label, _, tail = rest.partition(":")
    task, _, seed = tail.rpartition(":")
    return (label, task, int(seed)) if rest != thread and task and seed.isdigit() else None


def order_of(label: str) -> int:
    """Return where a protocol's row goes: in the order the comparison runs them."""
    name = protocol_name(label)
    return ORDER.index(name) if name in ORDER else len(ORDER)


async def comparison_of(store: Any, name: str) -> dict[str, Any] | None:
    """Return a comparison's figures by protocol, or None when the database holds none of its runs."""
    runs = [(t, found) for t in await store.threads() if (found := parse_thread(name, t))]
    if not runs:
        return None
    tasks = known_tasks({task for _, (_, task, _) in runs})
    records: dict[str, list[dict[str, Any]]] = {}
    unscored = 0
    for thread, (label, task_id, seed) in runs:
        values = await store.values(thread)
        task = tasks.get(task_id)
        if not scored(values) or task is None:
            unscored += 1
            continue
        protocol = Protocol(protocol_name(label), label, "", None)
        records.setdefault(label, []).append(record_of(protocol, task, seed, thread, values))
    baseline = next((r for label, r in records.items() if protocol_name(label) == "vote"), None)
    labels = sorted(records, key=order_of)
    summaries = [
        summarise(
            protocol_name(label),
            label,
            records[label],
            None if protocol_name(label) == "vote" else baseline,
        )
        for label in labels
    ]
    return {"summaries": summaries, "runs": len(runs), "unscored": unscored, "flip_names": FLIPS}
