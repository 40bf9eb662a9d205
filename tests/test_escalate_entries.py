"""Escalate holds at every entry point as a debate does: a queued line runs on a worker, and a fork of an
escalated debate keeps its vote and never asks it again."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine.app.cli.main import main
from debate_engine.app.cli.problem_lines import parse_problems
from debate_engine.app.store.queue import drive_thread
from debate_engine.graph.builder import compile_debate
from debate_engine.graph.roundtable import compile_roundtable
from debate_engine.graph.sample import compile_sample

SPLIT = "What is 17 * 23 - 4?"
"""A question the ``fake:solve=0.4`` voters split on (seeded by the question)."""


def _stored(db: Path, thread: str) -> dict[str, Any]:
    with sqlite3.connect(db, check_same_thread=False) as conn:
        graph = compile_debate(checkpointer=SqliteSaver(conn))
        return graph.get_state({"configurable": {"thread_id": thread}}).values


def test_a_queued_escalate_line_votes_then_debates_on_the_worker(tmp_path: Path) -> None:
    lines = f'{{"problem": "{SPLIT}", "votes": 3, "rounds": 1}}\n'
    (entry,) = parse_problems(lines, {"model": "fake:solve=0.4"}, tmp_path)
    assert entry.settings["escalate"] == {"votes": 3, "window": 3}
    saver = InMemorySaver()
    graphs = {
        "phases": compile_debate(checkpointer=saver),
        "roundtable": compile_roundtable(checkpointer=saver),
        "sample": compile_sample(checkpointer=saver),
    }
    values = asyncio.run(
        drive_thread(graphs, "q", entry.problem, entry.context, "w", settings=entry.settings)
    )
    ballot = values["solution"]["verdict"]["ballot"]
    assert (
        ballot["votes"] == 3
        and ballot["drawn"] == 3
        and ballot["outcome"]
        in {
            "settled",
            "escalated",
        }
    )


def _escalated(db: Path) -> str:
    """Run escalate debates until one splits; return its thread."""
    for n, question in enumerate([SPLIT, "What is 19 * 7 + 3?", "What is 45 + 67 * 2?"]):
        run = ["run", "--model", "fake:solve=0.4", "--protocol", "escalate", "--rounds", "2"]
        assert main([*run, "--db", str(db), "--thread-id", f"e{n}", "--quiet", question]) == 0
        if _stored(db, f"e{n}")["solution"]["verdict"]["ballot"]["outcome"] == "escalated":
            return f"e{n}"
    raise AssertionError("no question split the vote")


def test_a_fork_of_an_escalated_debate_keeps_the_vote_and_asks_no_vote_again(
    tmp_path: Path,
) -> None:
    db = tmp_path / "e.sqlite"
    original = _escalated(db)
    fork = ["fork", original, "--round", "1", "--rounds", "3", "--thread-id", "f", "--quiet"]
    assert main([*fork, "--db", str(db)]) == 0
    before, after = _stored(db, original), _stored(db, "f")
    votes = [t for t in before["transcript"] if t.get("round") == 1 and t["kind"] == "proposal"]
    kept = [t for t in after["transcript"] if t.get("round") == 1 and t["kind"] == "proposal"]
    assert kept == votes and len(votes) == 3
    assert after["solution"]["verdict"]["ballot"] == before["solution"]["verdict"]["ballot"]
    assert after["status"]["round"] == 3
    # the fork's own calls are rounds 2 and 3 and the judge's: no vote was drawn again
    assert set(after["spend"]["by_phase"]) == {"critique", "refine", "synthesize"}


def test_submit_takes_escalate_from_the_flag_and_from_a_line(tmp_path: Path) -> None:
    """``--protocol escalate --votes 5`` gives every line the vote; a line's own ``"protocol": "escalate"``
    draws the default 3; ``--votes`` without escalate is refused, as ``debate run`` refuses it."""
    from debate_engine.app.cli.main import _parser
    from debate_engine.app.cli.submit import entries_of
    from debate_engine.errors import InputError

    problems = tmp_path / "p.jsonl"
    problems.write_text(f'{{"problem": "{SPLIT}"}}\n{{"problem": "b", "protocol": "escalate"}}\n')
    base = ["submit", "--model", "fake", "--problems", str(problems)]
    flagged = entries_of(_parser().parse_args([*base, "--protocol", "escalate", "--votes", "5"]))
    assert [e.settings["escalate"]["votes"] for e in flagged] == [5, 5]
    plain = entries_of(_parser().parse_args(base))
    assert "escalate" not in plain[0].settings and plain[1].settings["escalate"]["votes"] == 3
    one = entries_of(
        _parser().parse_args(["submit", "--model", "fake", "--protocol", "escalate", SPLIT])
    )
    assert one[0].settings["escalate"] == {"votes": 3, "window": 3}
    try:
        entries_of(_parser().parse_args([*base, "--votes", "3"]))
    except InputError as exc:
        assert "add --protocol escalate" in str(exc)
    else:
        raise AssertionError("--votes without escalate was accepted")
