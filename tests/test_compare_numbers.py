"""``compare`` reads numbers as the debate does and reports the accuracy its interval is for.

Scoring and the debate's agreement key read an answer's number with one reader (``calls.numbers``):
``1e3`` is 1000 to both, and a typographic minus (U+2212) is a minus to both. The accuracy printed is
the mean over tasks of each task's share of right runs, which is what the interval counts.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.execute import record_of
from debate_engine.app.measure.compare.protocols import Protocol
from debate_engine.app.measure.compare.tasks import Task, is_correct, normalise
from debate_engine.nodes.positions import key_of

MINUS = "\u2212"


def number_task(answer: str) -> Task:
    return Task(
        id="t", question="What is it? Answer with the number only.", answer=answer, kind="number"
    )


def agreement(answer: str) -> str:
    return key_of({"position": "p", "answer": answer})


def run(task: str, correct: bool, seed: int) -> dict[str, Any]:
    return {
        "task": task,
        "seed": seed,
        "correct": correct,
        "tokens": 100,
        "cost": 0.0,
        "wall_s": 0.0,
        "flips": [],
        "consensus": False,
    }


def test_the_accuracy_printed_is_the_task_mean_its_interval_is_for() -> None:
    """Task a right on its 9 seeds, five tasks wrong on their one: 9 of 14 runs are right, and the table read
    ``0.643 (0.009-0.564)``, the point outside its own interval; one task of six (0.167) is what it counts."""
    runs = [run("a", True, seed) for seed in range(1, 10)] + [run(t, False, 1) for t in "bcdef"]
    summary = results.summarise("single", "single", runs, None)
    low, high = summary["interval"]
    assert summary["accuracy"] == pytest.approx(1 / 6)
    assert low <= summary["accuracy"] <= high
    assert "| single | 0.167 (0.009-0.564), 9/14 |" in results.markdown([summary], "t")
    # with as many seeds for every task it is the share of right runs
    even = [run(t, t in "ab" and seed != 3, seed) for t in "abcd" for seed in (1, 2, 3)]
    assert results.summarise("single", "single", even, None)["accuracy"] == pytest.approx(4 / 12)


SCORED = [
    ("1000", "1e3", True),
    ("1000", "1E3.", True),
    ("1", "1e3", False),
    ("0.001", "1e-3", True),
    ("-3013", f"{MINUS}3013", True),
    ("3013", f"{MINUS}3013", False),
    ("-3013", "The result is \uff0d3013.", True),
    ("4200", "4,200.0", True),
    ("1234567", "1234568", False),
]
"""A task's answer, what a run said, and whether it is right."""


def test_scoring_reads_exponents_and_the_typographic_minus() -> None:
    assert [is_correct(number_task(answer), said) for answer, said, _ in SCORED] == [
        right for _, _, right in SCORED
    ]


def test_the_agreement_key_reads_the_typographic_minus_as_a_minus() -> None:
    assert agreement(f"{MINUS}3013") == agreement("-3013") != agreement("3013")
    assert agreement("1e3") == agreement("1000") == agreement("1,000.00")


def spellings(value: Decimal) -> list[str]:
    """Return the ways a model writes one number: plain, with an exponent, with a typographic minus."""
    plain = format(value, "f")
    sign, digits, exponent = value.as_tuple()
    mantissa = "".join(map(str, digits))
    written = [plain, f"{'-' if sign else ''}{mantissa}e{exponent}"]
    return written + [text.replace("-", MINUS) for text in written if text.startswith("-")]


decimals = st.builds(
    lambda sign, digits, exponent: Decimal((sign, tuple(digits), exponent)),
    st.integers(0, 1),
    st.lists(st.integers(0, 9), min_size=1, max_size=12),
    st.integers(-8, 8),
)


@given(decimals, decimals)
def test_scoring_and_the_agreement_key_agree_on_every_pair_of_spellings(
    first: Decimal, second: Decimal
) -> None:
    for one in spellings(first):
        for other in spellings(second):
            same_key = agreement(one) == agreement(other)
            assert same_key == (normalise(one, "number") == normalise(other, "number")), (
                one,
                other,
            )
            assert same_key == (first == second), (one, other)


def test_a_run_s_consensus_reads_each_agent_s_answer_as_the_debate_did() -> None:
    """Three agents end on ``-3013`` written three ways: the debate agrees, so does the comparison's record."""
    transcript = [
        {"speaker": agent, "position": {"position": "p", "answer": said}}
        for agent, said in (("a", "-3013"), ("b", f"{MINUS}3013"), ("c", "-3.013e3"))
    ]
    assert len({agreement(t["position"]["answer"]) for t in transcript}) == 1
    values = {
        "transcript": transcript,
        "settings": {"agents": [{"id": "a"}, {"id": "b"}, {"id": "c"}]},
        "solution": {"verdict": {"method": "voting", "answer": f"{MINUS}3013"}},
    }
    protocol = Protocol(name="debate", label="debate", graph="debate", context=None)
    record = record_of(protocol, number_task("-3013"), 1, "thread", values)
    assert record["consensus"] is True and record["correct"] is True
