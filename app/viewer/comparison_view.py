"""A comparison read back from its threads: what ``debate compare`` prints, each run linked to its debate.

``debate compare`` stores every run as a thread ``compare:<id>:<protocol>:<task>:<seed>``;
the figures are made from them by the comparison's own code (``record_of``,
``summarise``): accuracy and interval, the paired test against the vote
(McNemar's), flips, confidently wrong consensus, tokens and cost. Beside them:
each task's result by protocol and seed, and the models and settings each
protocol's runs were stored with. A run's right answer is not stored with it: the
built-in tasks are made again from their seeded generator; runs of a task file are
shown with their spend but unscored.
"""

from __future__ import annotations

import re
from typing import Any

from debate_engine.app.measure.compare.protocols import ORDER, PROTOCOLS, Protocol
from debate_engine.app.measure.compare.results import METHOD, summarise
from debate_engine.app.measure.compare.scored_runs import record_of, scored
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


def task_order(task_id: str) -> tuple[int, str]:
    """Return where a task's row goes: built-in tasks by their number, then any other by its id."""
    found = BUILT_IN_ID.fullmatch(task_id)
    return (int(found[1]), "") if found else (1 << 62, task_id)


def settings_of(values: dict[str, Any]) -> dict[str, Any]:
    """Return a run's models and settings as the comparison page lists them for its protocol.

    ``unit`` is what its length counts: rounds, a roundtable's turns, or nothing (one answer each).
    """
    settings = values.get("settings") or {}
    agents = settings.get("agents") or []
    protocol = settings.get("protocol")
    unit = {"roundtable": "turn", "phases": "round"}.get(protocol or "", "")
    return {
        "models": ", ".join(dict.fromkeys(a["model"] for a in agents)),
        "judge": (settings.get("judge") or {}).get("model", ""),
        "agents": ", ".join(a["id"] for a in agents[:6]) + (" ..." if len(agents) > 6 else ""),
        "count": f"{len(agents):,}",
        "rounds": settings.get("rounds", 0),
        "unit": unit,
        "stop_rule": (settings.get("stop_rule") or {}).get("type", "") if unit == "round" else "",
        "synthesis": settings.get("synthesis", "") if unit else "",
    }


def why_unscored(values: dict[str, Any], known: bool) -> str:
    """Return why a run has no score: its task's answer is not kept, a cap cut it, or it did not finish."""
    if not known:
        return "no known answer"
    return "stopped by a spend cap" if values.get("stopped") == "budget" else "not finished"


async def comparison_of(store: Any, name: str) -> dict[str, Any] | None:
    """Return a comparison's figures by protocol, each task's runs, and the settings; None when the
    database holds none of its runs."""
    runs = [(t, found) for t in await store.threads() if (found := parse_thread(name, t))]
    if not runs:
        return None
    tasks = known_tasks({task for _, (_, task, _) in runs})
    records: dict[str, list[dict[str, Any]]] = {}
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    settings: dict[str, dict[str, Any]] = {}
    unscored = 0
    for thread, (label, task_id, seed) in runs:
        values = await store.values(thread)
        if values.get("settings") and label not in settings:  # the first run that was set up
            settings[label] = settings_of(values)
        task = tasks.get(task_id)
        cell: dict[str, Any] = {"thread": thread, "seed": seed}
        if not scored(values) or task is None:
            unscored += 1
            cell["unscored"] = why_unscored(values, task is not None)
        else:
            protocol = Protocol(protocol_name(label), label, "", None)
            record = record_of(protocol, task, seed, thread, values)
            records.setdefault(label, []).append(record)
            cell.update(answer=record["answer"], correct=record["correct"])
        by_task.setdefault(task_id, {}).setdefault(label, []).append(cell)
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
    return {
        "summaries": summaries,
        "runs": len(runs),
        "unscored": unscored,
        "flip_names": FLIPS,
        "method": METHOD,
        "tasks": len(by_task),
        "seeds": max(seed for _, (_, _, seed) in runs),
        "labels": sorted({label for _, (label, _, _) in runs}, key=order_of),
        "settings": settings,
        "results": [
            {
                "task": t,
                "known": tasks.get(t),
                "runs": {k: sorted(v, key=lambda c: c["seed"]) for k, v in by_task[t].items()},
            }
            for t in sorted(by_task, key=task_order)
        ],
    }
