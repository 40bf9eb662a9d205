"""Numeric answers compare by their exact value: different numbers never agree, one number spelled two ways does."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from debate_engine.nodes.positions import converged, key_of
from debate_engine.nodes.verdict import tally


def answer(text: str) -> str:
    return key_of({"position": "p", "answer": text})


def state_with(answers: list[str]) -> Any:
    """Three agents' refinements of round 2, one answer each, under the convergence stop rule."""
    agents = [f"a{n}" for n in range(len(answers))]
    turns = [
        {
            "seq": n,
            "id": f"refinement:r2:{a}",
            "kind": "refinement",
            "speaker": a,
            "position": {
                "position": f"It is {text}.",
                "reason": "r",
                "confidence": 90,
                "answer": text,
            },
        }
        for n, (a, text) in enumerate(zip(agents, answers, strict=True))
    ]
    return {
        "transcript": turns,
        "phase": "refine",
        "round": 2,
        "stopped": None,
        "assessments": [],
        "settings": {
            "rounds": 4,
            "agents": [{"id": a} for a in agents],
            "stop_rule": {"type": "convergence", "min_round": 2},
        },
    }


def test_numbers_that_differ_in_the_seventh_digit_are_three_positions() -> None:
    state = state_with(["1234567", "1234568", "1234569"])
    assert [len(group["agents"]) for group in tally(state)] == [1, 1, 1]  # no agreement of 3 of 3
    assert converged(state, [], 2) is None  # no convergence stop


def test_one_number_in_three_spellings_is_one_position() -> None:
    state = state_with(["1000", "1e3", "1,000.00"])
    assert [len(group["agents"]) for group in tally(state)] == [3]
    assert converged(state, [], 2) is not None


@pytest.mark.parametrize(
    "first,second",
    [
        ("42", "42.0"),
        ("1e3", "1000"),
        ("1,234,567", "1234567"),
        ("0.5", ".5"),
        ("-0", "0.00"),
        ("+7", "7."),
        ("4.2E1", "42"),
        ("1e99999999999999999999", "10e99999999999999999998"),
    ],
)
def test_spellings_of_one_value_agree(first: str, second: str) -> None:
    assert answer(first) == answer(second)


@pytest.mark.parametrize(
    "first,second",
    [
        ("1234567", "1234568"),
        ("0.1", "0.10000000000000001"),
        ("1,2,3", "123"),
        ("12,34", "1234"),
        ("-1", "1"),
        ("1" + "0" * 40 + "1", "1" + "0" * 40 + "2"),
    ],
)
def test_different_values_or_texts_do_not_agree(first: str, second: str) -> None:
    assert answer(first) != answer(second)


finite = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False),
    st.builds(
        lambda sign, digits, exponent: Decimal(
            (sign, tuple(int(d) for d in str(digits)), exponent)
        ),
        st.integers(0, 1),
        st.integers(0, 10**40),
        st.integers(-60, 60),
    ),
)
"""Any finite decimal: hypothesis's own, and long coefficients with exponents either side of zero."""


def spellings(value: Decimal) -> list[str]:
    """Ways a model might write ``value``: as Python prints it, fixed-point with grouping and trailing zeros,
    in scientific notation upper or lower case, with an explicit sign."""
    fixed = f"{value:f}"
    padded = fixed + ("000" if "." in fixed else ".000")
    spelled = [str(value), fixed, padded, f"{value:,f}", f"{value:e}", f"{value:E}"]
    return spelled + [f"+{text}" for text in spelled if not text.startswith("-")]


@given(finite, finite)
def test_distinct_decimals_have_distinct_keys(first: Decimal, second: Decimal) -> None:
    assume(first != second)
    assert answer(str(first)) != answer(str(second))


@given(finite)
def test_every_spelling_of_a_decimal_has_one_key(value: Decimal) -> None:
    assert {answer(text) for text in spellings(value)} == {answer(str(value))}


@given(st.integers(-(2**53), 2**53))
def test_an_integer_and_the_float_a_model_might_print_for_it_agree(number: int) -> None:
    """``42`` and ``42.0``; up to 2**53, where a float's shortest spelling is still the integer itself."""
    assert answer(str(number)) == answer(repr(float(number)))
