"""Regression tests from a mutation check (issue 11): each pins one rule with numbers worked out by hand.

Every test here failed against a one-line change to the engine that the rest of the suite let through:
the budget's separator reserve, the saturation point of the trigger count, the summary log's failed records,
the summarizer's chunks, the settings' ranges, key redaction, the clarifying questions' limit and the
roundtable's turn numbers and defaults. The spend cap's are in test_regressions_spend.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from debate_engine.config.context import Context, RoundtableContext
from debate_engine.config.resolve import ConfigError, resolve
from debate_engine.config.roundtable_params import roundtable_params
from debate_engine.memory import BudgetSplit, SummarizationSettings, make_budget, should_summarize
from debate_engine.memory.budget import (
    HISTORY_HEADER,
    ViewRequest,
    build_view,
    render_turn,
    turn_cost,
)
from debate_engine.memory.perspective import latest_summaries
from debate_engine.memory.summary_prompt import chunks
from debate_engine.memory.tokens import count_messages, count_tokens
from debate_engine.nodes.clarify import answers_for, questions_of
from debate_engine.nodes.schedule import next_step
from debate_engine.providers.secrets import redact
from tests.conftest import make_turn
from tests.test_budget import summary

# --- the working view: each turn reserves its separator ------------------------------------------------------


def test_many_small_turns_are_shown_whole_each_reserving_two_tokens_for_its_separator() -> None:
    """Forty one-word turns in a 344-token prompt: the oldest are left out, nothing is cut.

    Counting a block without the two tokens of its "\\n\\n" separator lets too many in; the finished prompt
    then exceeds the budget and the last-resort cut shortens the history (shortened=True, a turn cut).
    """
    turns = [make_turn(i, content="x", round_no=1) for i in range(40)]
    budget = make_budget(600, 256)  # total 344
    assert budget.total == 344
    view = build_view(
        ViewRequest(
            system_prompt="You are an architect.",
            task="Refine.",
            summary=None,
            newest_first=list(reversed(turns)),
            since=0,
            to_seq=40,
            budget=budget,
        )
    )
    block = "### Proposal by architect (round 1)\nx"
    assert render_turn(turns[0]) == block
    # The room: the total less the fixed parts (system, the history header, the task), counted on their own.
    room = 344 - count_messages(
        "You are an architect.", f"{HISTORY_HEADER}\n\n## Your task\nRefine."
    )
    shown = room // (count_tokens(block) + 2)
    assert 0 < shown < 40
    assert view.complete is False
    assert (
        view.record["turns"] == shown
        and view.record["from_seq"] == 40 - shown
        and view.record["to_seq"] == 40
    )
    assert view.record["shortened"] is False
    assert (
        view.user
        == f"{HISTORY_HEADER}\n" + "\n\n".join([block] * shown) + "\n\n## Your task\nRefine."
    )
    assert view.record["prompt_tokens"] == count_messages("You are an architect.", view.user) <= 344


# --- triggers: counting stops only past every trigger --------------------------------------------------------


def test_with_no_summary_slice_one_turn_over_the_recent_slice_still_fires_the_overflow_rule() -> (
    None
):
    """Summary share 0: history == recent == 720 tokens. Seven turns of 120 tokens (840) must overflow.

    The count may stop early only once it is past every trigger (one token beyond the largest limit);
    stopping *at* 720 would see 6 turns, 720 tokens, no overflow, and decide not to summarize.
    """
    budget = make_budget(1280, 256, BudgetSplit(system=2, summary=0, recent=6))
    # total 1024; system 1024*2/8 = 256; summary 0; recent min(1024*6/8 = 768, 1024 - 256 - 0 - 48 = 720) = 720
    assert (budget.total, budget.system, budget.summary, budget.recent, budget.history) == (
        1024,
        256,
        0,
        720,
        720,
    )
    turns = [make_turn(i, content="word " * 96, round_no=1) for i in range(7)]
    for t in turns:
        t["tokens"] = 96  # turn_cost: 96 + the 24-token heading allowance = 120
    assert [turn_cost(t) for t in turns] == [120] * 7
    off = SummarizationSettings(
        threshold=0,
        token_limit=0,
        trigger_ratio=2.0,
        reset_ratio=0.5,
        every_n_turns=0,
        min_turns=1,
        cooldown_turns=0,
    )
    decision = should_summarize(turns, "architect", None, off, budget)
    assert decision.fire is True
    assert decision.reason == "overflow: 840 uncovered tokens > recent budget 720"
    assert decision.live_tokens == 840
    six = should_summarize(
        turns[:6], "architect", None, off, budget
    )  # exactly 720: fits, nothing fires
    assert six.fire is False and six.live_tokens == 720 and six.reason == "below every trigger"


# --- perspective: a failed summary is never the latest ----------------------------------------------------------


def test_the_latest_summary_skips_a_newer_failed_record() -> None:
    ok = summary("Quotas per tenant.", through=6, ident="sum-architect-r2-6")
    failed: Any = {**summary("", through=6, ident="sum-architect-r3-9"), "status": "failed"}
    other = summary("Security view.", through=4, ident="sum-security-r2-4", agent="security")
    log = [other, ok, failed]
    found = latest_summaries(log, ["architect", "security"])
    assert {k: v["id"] for k, v in found.items()} == {
        "architect": "sum-architect-r2-6",
        "security": "sum-security-r2-4",
    }
    assert latest_summaries([failed], ["architect"]) == {}


# --- summarizer chunks -------------------------------------------------------------------------------------------


def test_chunks_fill_their_room_exactly_before_starting_a_new_one() -> None:
    """Turns of cost 100 in a room of 300: three per chunk (300 is not over 300), a new chunk at the fourth."""
    turns = [make_turn(i, round_no=1) for i in range(7)]
    for t in turns:
        t["tokens"] = 76  # cost 76 + 24 = 100
    assert [turn_cost(t) for t in turns] == [100] * 7
    assert [[t["seq"] for t in c] for c in chunks(turns, 300)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [[t["seq"] for t in c] for c in chunks(turns, 299)] == [[0, 1], [2, 3], [4, 5], [6]]
    assert [[t["seq"] for t in c] for c in chunks(turns, 50)] == [
        [0],
        [1],
        [2],
        [3],
        [4],
        [5],
        [6],
    ]  # alone
    assert chunks([], 300) == [[]]


# --- settings: ranges, max_questions ---------------------------------------------------------------------------


def test_max_questions_comes_from_the_context_whenever_it_is_given() -> None:
    assert resolve(Context(model="fake", clarify=True, max_questions=5))["max_questions"] == 5
    assert resolve(Context(model="fake", clarify=True, max_questions=0))["max_questions"] == 0
    assert (
        resolve(Context(model="fake", max_questions=5))["max_questions"] == 5
    )  # clarify may come from the file
    assert (
        resolve(Context(model="fake", clarify=True))["max_questions"] == 3
    )  # not given: the file's default


def test_max_questions_from_0_to_20_and_no_more() -> None:
    assert resolve(Context(model="fake", clarify=True, max_questions=20))["max_questions"] == 20
    with pytest.raises(ConfigError) as caught:
        resolve(Context(model="fake", clarify=True, max_questions=21))
    assert caught.value.problems == ["max_questions: 21 is out of range; use a number from 0 to 20"]


def test_a_roundtable_of_one_turn_is_allowed_and_of_zero_is_not() -> None:
    settings = resolve(RoundtableContext(model="fake", turns=1))
    assert settings["rounds"] == 1 and settings["roundtable"]["max_turns"] == 1
    with pytest.raises(ConfigError) as caught:
        resolve(RoundtableContext(model="fake", turns=0))
    assert caught.value.problems == ["turns: 0 is out of range; use a number from 1 to 10000"]


def test_roundtable_defaults_are_the_seeds() -> None:
    params = roundtable_params(RoundtableContext())
    assert params == {
        "order": "round-robin",
        "max_turns": 100,
        "summary_every": 50,
        "view": {"system": 2048, "summary": 1024, "recent": 5120},
        "stop_rule": "max_turns",
    }
    assert resolve(RoundtableContext(model="fake"))["rounds"] == 100


# --- key redaction --------------------------------------------------------------------------------------------


def test_a_secret_variable_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET", "whsec-9f8e7d6c")
    assert redact("signed with whsec-9f8e7d6c.") == "signed with [redacted]."


def test_the_longer_of_two_overlapping_keys_is_redacted_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHORT_API_KEY", "sk-abcdef")
    monkeypatch.setenv("LONG_API_KEY", "sk-abcdef123456")
    assert redact("a=sk-abcdef123456 b=sk-abcdef") == "a=[redacted] b=[redacted]"


def test_a_bearer_token_of_six_characters_is_redacted_and_of_five_is_not() -> None:
    assert redact("Authorization: Bearer abc123") == "Authorization: Bearer [redacted]"
    assert redact("Authorization: Bearer abc12") == "Authorization: Bearer abc12"


# --- clarifications -----------------------------------------------------------------------------------------------


def test_questions_are_cut_to_the_limit_with_markers_and_none_removed() -> None:
    text = "1. Which store?\n2) How many tenants?\nNONE\n- What latency?\n* Burst size?"
    assert questions_of(text, 3) == ["Which store?", "How many tenants?", "What latency?"]
    assert questions_of(text, 1) == ["Which store?"]
    assert questions_of(text, 0) == []
    assert questions_of(text, 10) == [
        "Which store?",
        "How many tenants?",
        "What latency?",
        "Burst size?",
    ]


def test_answers_are_padded_and_cut_to_the_questions() -> None:
    assert answers_for("Redis.", "a", 3) == ["Redis.", "(no answer)", "(no answer)"]
    assert answers_for({"a": ["1", "2", "3", "4"]}, "a", 2) == ["1", "2"]
    assert answers_for({"b": "x"}, "a", 2) == ["(no answer)", "(no answer)"]


# --- the roundtable's turn numbers ----------------------------------------------------------------------------------


def table_state(phase: str, taken: int, order: str = "round-robin", max_turns: int = 10) -> Any:
    return {
        "phase": phase,
        "round": taken,
        "turn_count": taken,
        "settings": {
            "protocol": "roundtable",
            "agents": [{"id": "a"}, {"id": "b"}],
            "rounds": max_turns,
            "roundtable": {
                "order": order,
                "max_turns": max_turns,
                "summary_every": 50,
                "view": {},
                "stop_rule": "max_turns",
            },
        },
    }


def test_the_roundtable_numbers_each_turn_one_past_those_taken() -> None:
    assert next_step(table_state("setup", 0)) == ("turn", 1)
    assert next_step(table_state("turn", 3)) == ("turn", 4)
    assert next_step(table_state("turn", 9)) == ("turn", 10)
    assert next_step(table_state("turn", 10)) == ("synthesize", 10)
    assert next_step(table_state("turn", 3, "moderator")) == ("moderate", 4)
    assert next_step(table_state("moderate", 3, "moderator")) == ("turn", 4)
    assert next_step(table_state("done", 10)) == ("done", 10)
