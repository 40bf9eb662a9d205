"""``debate compare`` measures escalate: its tokens are the vote's plus the escalated share of the debate's, and
``--window`` draws the vote a window at a time."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine import Context
from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.protocols import protocol
from debate_engine.app.measure.compare.tasks import builtin_tasks
from debate_engine.graph.builder import compile_debate
from debate_engine.graph.sample import compile_sample

MODEL = "fake:solve=0.95/0.3"


def by_task(name: str, tasks: int, votes: int = 3) -> dict[str, dict[str, Any]]:
    """Return each task's run of protocol ``name`` (one round, k = ``votes``), by task id."""
    graphs = {"debate": compile_debate(), "sample": compile_sample()}
    comparison = Comparison(MODEL, graphs, jobs=8, quiet=True)
    chosen = protocol(name, Context(model=MODEL, rounds=1), "generalist", votes)
    found = builtin_tasks(f"builtin:arithmetic:{tasks}")
    return {r["task"]: r for r in asyncio.run(run_protocol(comparison, chosen, found, 1))}


def test_escalates_tokens_are_the_votes_plus_the_escalated_share_of_the_debates() -> None:
    """A settled task costs exactly its vote (no vote asked again, no judge); an escalated one adds a debate.

    Over the tasks, escalate's mean is the vote's plus the escalated share of what a debate spends beyond
    its proposals (which the votes already are).
    """
    vote, escalate, debate = (by_task(name, 30) for name in ("vote", "escalate", "debate"))
    settled = [t for t, r in escalate.items() if not r["escalated"]]
    escalated = [t for t, r in escalate.items() if r["escalated"]]
    assert settled and escalated  # the population splits some votes and not others
    assert all(escalate[t]["tokens"] == vote[t]["tokens"] for t in settled)
    assert all(escalate[t]["tokens"] > vote[t]["tokens"] for t in escalated)
    share = len(escalated) / len(escalate)
    beyond = mean(debate[t]["tokens"] - vote[t]["tokens"] for t in debate)
    predicted = mean(r["tokens"] for r in vote.values()) + share * beyond
    measured = mean(r["tokens"] for r in escalate.values())
    assert abs(measured - predicted) / predicted < 0.05, (measured, predicted)


def _ballots(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db, check_same_thread=False) as conn:
        threads = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
        graph = compile_debate(checkpointer=SqliteSaver(conn))
        states = [graph.get_state({"configurable": {"thread_id": t}}).values for t in threads]
    assert all(
        ":escalate-5-w2:" in t for t in threads
    )  # the window is in the label: its own threads
    return [s["solution"]["verdict"]["ballot"] for s in states]


def test_compare_window_draws_the_vote_two_at_a_time(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    argv = ["compare", "builtin:arithmetic:12", "--model", MODEL, "--protocols", "escalate"]
    argv += ["--votes", "5", "--window", "2", "--rounds", "1", "--db", str(db), "--quiet"]
    assert main(argv) == 0
    ballots = _ballots(db)
    assert len(ballots) == 12 and {b["window"] for b in ballots} == {2}
    early = [b for b in ballots if b["outcome"] == "settled" and b["drawn"] < 5]
    assert early and all(
        b["drawn"] in (2, 4) for b in early
    )  # stopped at the first window that agreed


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--protocols", "vote", "--window", "1"], "add escalate to --protocols"),
        (["--protocols", "escalate", "--votes", "3", "--window", "4"], "give 1 to the vote's 3"),
        (["--protocols", "escalate", "--window", "6"], "give 1 to the vote's 5"),
        (["--protocols", "escalate", "--window", "0"], "give 1 to the vote's 5"),
        (["--protocols", "single,vote,debate,escalate", "--window", "2"], "give --votes K too"),
    ],
)
def test_a_window_that_cannot_apply_is_refused(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["compare", "builtin:arithmetic:2", "--model", MODEL, "--db", str(tmp_path / "c.sqlite")]
    assert main([*base, *argv]) == 2
    assert said in capsys.readouterr().err
