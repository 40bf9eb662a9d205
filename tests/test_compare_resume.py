"""``debate compare`` stopped by SIGINT part-way: exit 130 saying how to continue, then the same figures as an
uninterrupted comparison, and no call of a run that had finished sent again.

The real command runs against a loopback OpenAI-compatible server that records every request.
With ``--jobs 1`` the runs go one after another: single's 5, then the debates; the 38th request (a critique of
the third debate) hangs, and SIGINT stops the comparison there. Each request is traced to its run by what its
prompt holds: the task's question, and the generalist's voice for single and vote (the debaters are others).
The stopped comparison runs in a subprocess, the others through the entry point in this process.
Accuracy is 0 (the server's replies are no arithmetic); what is checked is the resumption.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.measure.compare.execute import finished
from debate_engine.app.measure.compare.tasks import builtin_tasks
from tests.support.debate_cli import background, cli_env, in_process, wait_for
from tests.support.openai_server import OpenAIServer
from tests.support.resume_debate import STOP_WAIT_S

pytestmark = pytest.mark.integration  # SIGINT needs a process of its own

TASKS = f"builtin:arithmetic:{5}"
ARGS = [
    "compare",
    TASKS,
    "--protocols",
    "single,vote,debate",
    "--model",
    "openai:test-model",
    "--rounds",
    "1",
    "--jobs",
    "1",
]
HANG_AT = 38
"""Single's 5 calls, two debates of 13 (3 proposals, 6 critiques, 3 refinements, the judge), then the third
debate's 3 proposals and its first critiques: the 38th request hangs."""
QUESTION = re.compile(r"What is the result of [\d+*-]+\?")


def finished_runs(db: Path) -> set[tuple[str, str]]:
    """(protocol label, task id) of every run the database holds finished."""
    from debate_engine.app.store.database import open_checkpointer, thread_ids
    from debate_engine.graph.by_protocol import graph_for

    async def read() -> set[tuple[str, str]]:
        found = set()
        async with open_checkpointer(str(db)) as saver:
            graphs = {key: graph_for(key, saver) for key in ("sample", "debate")}
            for thread in await thread_ids(saver):
                _, _, label, task, _ = thread.split(":")
                graph = graphs["debate" if label == "debate" else "sample"]
                if finished(
                    (await graph.aget_state({"configurable": {"thread_id": thread}})).values
                ):
                    found.add((label, task))
        return found

    return asyncio.run(read())


def run_of(prompt: str) -> tuple[str, str]:
    """Return the run a request belongs to: ``sample`` (single or vote) or ``debate``, and the task its question names."""
    ids = {t.question.split(" Answer")[0]: t.id for t in builtin_tasks(TASKS)}
    questions = set(QUESTION.findall(prompt))
    assert len(questions) == 1, f"a request names {len(questions)} tasks: {prompt[:300]}"
    return "sample" if "as the generalist" in prompt else "debate", ids[questions.pop()]


def stop_part_way(server: OpenAIServer, env: dict[str, str], folder: Path) -> dict[str, Any]:
    """Start the comparison, SIGINT it while its 38th request hangs; its exit code, stderr and requests."""
    server.faults.extend([None] * (HANG_AT - 1) + ["hang"])
    log = folder / "stopped.err"
    with background(*ARGS, "--db", str(folder / "k.sqlite"), log=log, env=env) as process:
        wait_for(process, lambda: len(server.requests) >= HANG_AT, f"the {HANG_AT}th request", log)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=STOP_WAIT_S)
    return {"code": code, "err": log.read_text(), "prompts": server.prompts()}


@pytest.fixture(scope="module")
def comparisons(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Return an uninterrupted comparison; the same stopped part-way, resumed with --resume, then run once more."""
    folder = tmp_path_factory.mktemp("compare")
    found: dict[str, Any] = {}
    with OpenAIServer(words=20, hang_s=60) as server:
        env = cli_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test")
        for name, extra in (
            ("whole", ["--db", str(folder / "w.sqlite")]),
            ("stopped", None),
            ("resumed", ["--db", str(folder / "k.sqlite"), "--resume"]),
            ("again", ["--db", str(folder / "k.sqlite")]),
        ):
            server.requests.clear()
            if extra is None:
                found[name] = stop_part_way(server, env, folder)
                found["finished"] = finished_runs(folder / "k.sqlite")
                continue
            done = in_process(*ARGS, *extra, "--output", str(folder / f"{name}.json"), env=env)
            assert done.returncode == 0, done.stderr
            found[name] = {
                "out": done.stdout,
                "prompts": server.prompts(),
                "json": json.loads((folder / f"{name}.json").read_text()),
            }
    return found


def figures(found: dict[str, Any]) -> dict[str, Any]:
    """Everything ``--output`` holds but wall time."""
    for row in found["protocols"]:
        row.pop("wall_s_per_task")
    for run in found["runs"]:
        run.pop("wall_s")
    return found


def table(out: str) -> list[list[str]]:
    """Return the Markdown table's rows, the seconds-per-task column blanked."""
    rows = [
        line.split(" | ") for line in out.splitlines() if line.startswith("| ") and " | " in line
    ]
    return [row[:6] + row[7:] if len(row) > 7 else row for row in rows]


def test_sigint_exits_130_saying_how_to_continue(comparisons: dict[str, Any]) -> None:
    stopped = comparisons["stopped"]
    assert stopped["code"] == 130, stopped["err"]
    assert "error: interrupted" in stopped["err"] and "--resume" in stopped["err"], stopped["err"]
    assert "same command" in stopped["err"] and "Traceback" not in stopped["err"]


def test_the_resumed_comparison_gives_the_uninterrupted_table(comparisons: dict[str, Any]) -> None:
    whole, resumed, again = (comparisons[k] for k in ("whole", "resumed", "again"))
    assert figures(resumed["json"]) == figures(whole["json"]) == figures(again["json"])
    assert table(resumed["out"]) == table(whole["out"]) == table(again["out"])
    assert len(table(whole["out"])) == 4, whole["out"]  # the header and single, vote, debate


def test_no_call_of_a_finished_run_is_sent_again(comparisons: dict[str, Any]) -> None:
    done = comparisons["finished"]
    tasks = [t.id for t in builtin_tasks(TASKS)]
    debated = {task for label, task in done if label == "debate"}
    assert {task for label, task in done if label == "single"} == set(tasks)
    assert debated == set(tasks[:2]), "stopped in the third debate, the first two finished"
    sent = Counter(run_of(p) for p in comparisons["resumed"]["prompts"])
    assert not {("debate", task) for task in debated} & set(sent), (
        "a finished debate's call was sent again"
    )
    voters = int(comparisons["resumed"]["json"]["protocols"][1]["label"].split("-")[1])
    assert all(sent[("sample", task)] == voters for task in tasks), (
        "single's answers were asked again"
    )
    assert all(sent[("debate", task)] > 0 for task in tasks[2:])
    assert comparisons["again"]["prompts"] == [], "a finished comparison sends nothing"


def test_the_two_processes_together_send_what_one_sends(comparisons: dict[str, Any]) -> None:
    whole, first, resumed = (
        Counter(comparisons[k]["prompts"]) for k in ("whole", "stopped", "resumed")
    )
    assert resumed <= whole, (
        "the resumed comparison asked something the uninterrupted one never did"
    )
    assert whole <= first + resumed, "a call was lost"
    assert sum((first + resumed - whole).values()) <= 6, (
        "only the cut-off debate's calls are sent twice"
    )
