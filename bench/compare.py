"""Orchestration overhead of ``debate compare``: tasks per second of ``single`` on the fake model, against
asking the same fake model the same questions in a plain loop in the same process."""

from __future__ import annotations

import time
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage

from bench.common import table

TASKS = 100


def bench_compare(folder: Path, tasks: int = TASKS) -> None:
    from debate_engine.app.cli.main import main
    from debate_engine.app.measure.compare.tasks import builtin_tasks
    from debate_engine.prompts import load_prompt
    from debate_engine.providers.factory import chat_model

    model = chat_model("fake:solve=0.6")
    began = time.perf_counter()
    for task in builtin_tasks(f"builtin:arithmetic:{tasks}"):
        model.invoke(
            [
                SystemMessage(load_prompt("roles/generalist")),
                HumanMessage(f"## Your task\n{task.question}"),
            ]
        )
    direct = tasks / (time.perf_counter() - began)
    began = time.perf_counter()
    main(
        [
            "compare",
            f"builtin:arithmetic:{tasks}",
            "--protocols",
            "single",
            "--model",
            "fake:solve=0.6",
            "--db",
            str(folder / "compare.sqlite"),
            "--quiet",
        ]
    )
    engine = tasks / (time.perf_counter() - began)
    table(
        ["path", "tasks/s"],
        [
            ["fake model in a plain loop", f"{direct:.1f}"],
            ["`debate compare --protocols single` (SQLite, checkpointed)", f"{engine:.1f}"],
            ["ratio (loop / compare)", f"{direct / engine:.1f}x"],
        ],
    )
