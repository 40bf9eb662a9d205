"""The fake population: a model whose truth is known, so the comparison's statistics can be checked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.protocols import protocol
from debate_engine.app.measure.compare.stats import bootstrap_interval, majority_accuracy
from debate_engine.app.measure.compare.tasks import builtin_tasks
from debate_engine.config.context import Context
from debate_engine.graph.builder import compile_debate
from debate_engine.graph.sample import compile_sample
from debate_engine.providers.factory import ModelConfigError, chat_model, parse_spec
from debate_engine.providers.fake import evaluate, stated_answers


def test_the_population_spec_is_parsed_and_checked() -> None:
    assert parse_spec("fake:solve=0.6,conform=0.5").params == {"solve": "0.6", "conform": "0.5"}
    assert parse_spec("fake:words=7").params == {"words": "7"}  # the old specs still work
    for bad, said in (
        ("fake:solve=1.5", "probability between 0 and 1"),
        ("fake:solve=nan", "probability"),
        ("fake:conform=0.5", "needs solve=P"),
        ("fake:smart=1", "solve=P or conform=C"),
    ):
        with pytest.raises(ModelConfigError, match=said):
            parse_spec(bad)


def test_expressions_are_read_without_eval() -> None:
    assert evaluate("12+34*56-78") == 12 + 34 * 56 - 78
    with pytest.raises(ValueError, match="not an integer expression"):
        evaluate("__import__('os')")


def test_the_right_answer_comes_with_probability_solve_and_else_the_one_wrong_answer() -> None:
    prompt = [SystemMessage("You are a voter."), HumanMessage("## Your task\nWhat is 10+2*3?")]
    assert chat_model("fake:solve=1").invoke(prompt).content.startswith("My answer is 16.")
    assert chat_model("fake:solve=0").invoke(prompt).content.startswith("My answer is 17.")
    plain = chat_model("fake").invoke(prompt).content
    assert "My answer" not in plain, "without solve the fake replies as it always did"


def test_stated_answers_tell_the_agent_from_the_others() -> None:
    prompt = (
        "### Proposal by kiss (round 1)\nMy answer is 5. x\n### Critique by architect of kiss (round 1)\n"
        "My answer is 6. y\n### Critique by security of kiss (round 1)\nMy answer is 6. z\n## Your task\nQ"
    )
    assert stated_answers(prompt, "kiss") == (5, [6, 6])


def _runs(
    graph: Any, name: str, votes: int, tasks: int, model: str = "fake:solve=0.6"
) -> list[dict[str, Any]]:
    comparison = Comparison("t", {"sample": graph, "debate": graph}, jobs=16, quiet=True)
    chosen = protocol(name, Context(model=model, rounds=1), "generalist", votes)
    return asyncio.run(
        run_protocol(comparison, chosen, builtin_tasks(f"builtin:arithmetic:{tasks}"), 1)
    )


@pytest.mark.integration  # 1,800 samples, about 15 s of CPU: `make test`
def test_single_and_vote_match_the_binomial_formula_over_300_tasks() -> None:
    graph = compile_sample()
    single, vote = _runs(graph, "single", 1, 300), _runs(graph, "vote", 5, 300)
    for runs, expected in ((single, 0.6), (vote, majority_accuracy(0.6, 5))):
        low, high = bootstrap_interval([r["correct"] for r in runs])
        assert low <= expected <= high, (expected, low, high)
    assert round(majority_accuracy(0.6, 5), 3) == 0.683
    assert {len(r["flips"]) for r in vote} == {5}, "five voters, each with an answer"


def test_a_debate_of_conformers_counts_every_flip() -> None:
    runs = _runs(compile_debate(), "debate", 1, 20, "fake:solve=0.6,conform=1")
    flips = [pair for r in runs for pair in r["flips"]]
    assert len(flips) == 3 * 20, "three agents per debate, each with a first and a final answer"
    # With conform=1 an agent whose two critics agree against it always switches: a flip whenever that happens.
    assert any(first != final for first, final in flips)
