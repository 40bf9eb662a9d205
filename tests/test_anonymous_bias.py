"""Identity bias, measured on the fake population (issue 42): ``defer`` pulls a named debate, not an anonymous one.

Two followers (solve p) defer to a wrong-prone author (solve q) with probability d whenever a refinement shows
its answer under its name; the judge states the agents' majority. Named, a follower ends on the author's answer:
right with probability ``p + (1-p)d`` when the author is right, ``p(1-d)`` when it is wrong. Anonymous, the
author is only ``Author B``: the followers keep their own answers and the majority is the binomial one. The
runs go through ``debate compare``'s own machinery (``run_protocol``, ``summarise``), as ``debate`` and
``debate-anon``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.protocols import protocol
from debate_engine.app.measure.compare.tasks import builtin_tasks
from debate_engine.config.context import Context
from debate_engine.graph.builder import compile_debate
from debate_engine.providers.factory import ModelConfigError, chat_model, parse_spec

P, Q, D = 0.8, 0.2, 0.8
"""The followers' solve rate, the wrong-prone author's, and how often a follower defers to it by name."""
FOLLOWER = f"fake:words=8,solve={P},defer=security:{D}"


def named_accuracy(p: float, q: float, d: float) -> float:
    """Return the accuracy of the majority of two followers and the author, each follower taking the author's
    answer with probability d."""
    right, wrong = p + (1 - p) * d, p * (1 - d)
    return q * (1 - (1 - right) ** 2) + (1 - q) * wrong**2


def anonymous_accuracy(p: float, q: float) -> float:
    """Return the accuracy of the binomial majority of two followers and the author, each on its own."""
    return p * p + 2 * p * (1 - p) * q


def population(tmp_path: Path) -> str:
    path = tmp_path / "population.json"
    agents = [
        {"id": "kiss", "role": "kiss", "model": FOLLOWER},
        {"id": "architect", "role": "architect", "model": FOLLOWER},
        {"id": "security", "role": "security", "model": f"fake:words=8,solve={Q}"},
    ]
    judge = {"model": "fake:words=8,solve=0.5,conform=1"}  # states the agents' majority
    path.write_text(json.dumps({"agents": agents, "judge": judge}))
    return str(path)


@pytest.mark.parametrize(
    "tasks",
    [60, pytest.param(300, marks=pytest.mark.integration)],  # 300: about 40 s, `make test`
)
def test_a_named_debate_is_pulled_toward_the_wrong_prone_author_and_an_anonymous_one_is_not(
    tmp_path: Path, tasks: int
) -> None:
    assert (
        round(named_accuracy(P, Q, D), 3) == 0.220 and round(anonymous_accuracy(P, Q), 3) == 0.704
    )
    context = Context(config_file=population(tmp_path), rounds=1, summarize=False)
    graph = compile_debate()
    found: dict[str, Any] = {}
    for name in ("debate", "debate-anon"):
        comparison = Comparison("bias", {"debate": graph}, jobs=8, quiet=True)
        chosen = protocol(name, context, "", 1)
        asked = builtin_tasks(f"builtin:arithmetic:{tasks}")
        runs = asyncio.run(run_protocol(comparison, chosen, asked, 1))
        found[name] = results.summarise(name, chosen.label, runs, None, planned=tasks)
    named, anonymous = found["debate"], found["debate-anon"]
    assert named["runs"] == anonymous["runs"] == tasks
    low, high = named["interval"]
    assert low <= named_accuracy(P, Q, D) <= high, named
    low, high = anonymous["interval"]
    assert low <= anonymous_accuracy(P, Q) <= high, anonymous
    assert named["interval"][1] < anonymous["interval"][0], "the pull is beyond chance"


class _Answer(BaseModel):
    """A position turn's answer, as the fake fills it."""

    reply: str
    answer: str


def ask(spec: str, history: str, me: str = "kiss") -> str:
    prompt = f"## Problem\nWhat is 20+22?\n\n{history}\n## Your task\nRefine."
    model = chat_model(spec)
    answering = model.with_structured_output(_Answer)
    meta = {"metadata": {"agent_id": me, "thread_id": "t"}}
    return str(answering.invoke([SystemMessage("You debate."), HumanMessage(prompt)], meta).answer)


def test_defer_takes_the_named_authors_answer_and_cannot_act_on_a_letter() -> None:
    own = "### Proposal by kiss (round 1)\nMy answer is 42. x\n"
    named = own + "### Critique by security of kiss (round 1)\nMy answer is 43. y\n"
    anonymous = (
        "### Proposal by you (round 1)\nMy answer is 42. x\n"
        "### Critique by Author B of you (round 1)\nMy answer is 43. y\n"
    )
    assert ask("fake:solve=1,defer=security:1", named) == "43"
    assert ask("fake:solve=1,defer=security:1", anonymous) == "42"
    assert ask("fake:solve=1", named) == "42", "without defer the agent keeps its answer"
    assert ask("fake:solve=1,defer=security:0", named) == "42"
    others = own + "### Critique by architect of kiss (round 1)\nMy answer is 43. y\n"
    assert ask("fake:solve=1,defer=security:1", others) == "42", "only the named author counts"


def test_the_defer_spec_is_checked() -> None:
    assert parse_spec("fake:solve=0.6,defer=security:0.8").params["defer"] == "security:0.8"
    for bad, said in (
        ("fake:solve=0.6,defer=security", "defer must be AGENT:P"),
        ("fake:solve=0.6,defer=security:2", "defer must be AGENT:P"),
        ("fake:solve=0.6,defer=:0.5", "defer must be AGENT:P"),
        ("fake:defer=security:0.5", "defer needs solve=P"),
    ):
        with pytest.raises(ModelConfigError, match=said):
            parse_spec(bad)


def test_debate_compare_runs_debate_anon_beside_debate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    argv = ["compare", "builtin:arithmetic:3", "--protocols", "debate,debate-anon"]
    argv += ["--config", population(tmp_path), "--rounds", "1", "--no-summary"]
    assert main([*argv, "--db", str(tmp_path / "c.sqlite"), "--output", str(out), "--quiet"]) == 0
    found = json.loads(out.read_text())
    assert [p["protocol"] for p in found["protocols"]] == ["debate", "debate-anon"]
    assert "| debate-anon |" in capsys.readouterr().out
    assert {r["protocol"] for r in found["runs"]} == {"debate", "debate-anon"}
