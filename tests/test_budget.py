"""The working context never exceeds its budget, and its record says exactly what it showed.

It is one module because every test here checks the one budget function, ``build_view``, from another side.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debate_engine.memory import (
    BudgetError,
    BudgetSplit,
    SummaryRecord,
    ViewRequest,
    build_view,
    count_messages,
    count_tokens,
    make_budget,
)
from debate_engine.memory.budget import recent_room, render_turn, turn_cost
from debate_engine.memory.facets import empty_facets
from tests.conftest import make_turn


def summary(
    text: str,
    *,
    through: int = 0,
    depth: int = 0,
    ident: str = "s1",
    agent: str = "architect",
    parent_id: str | None = None,
    tokens_after: int | None = None,
) -> SummaryRecord:
    """Return a successful summary record with ``text`` as both its text and its narrative."""
    return SummaryRecord(
        id=ident,
        agent_id=agent,
        role=agent,
        round=2,
        depth=depth,
        parent_id=parent_id,
        status="ok",
        text=text,
        narrative=text,
        facets=empty_facets(),
        through=through,
        calls=1,
        chars_before=0,
        chars_after=len(text),
        tokens_before=0,
        tokens_after=count_tokens(text) if tokens_after is None else tokens_after,
        strategy="rolling",
        reason="test",
        structured=True,
        error=None,
        latency_ms=0,
        usage=None,
        model="fake",
        created_at=0.0,
    )


def marked(seq: int, words: int) -> str:
    """Turn content whose start and end can be found in a prompt."""
    return f"[turn {seq} begins] " + "lorem ipsum dolor " * words + f"[turn {seq} ends]"


# --- make_budget ---------------------------------------------------------------------------------------------


def test_split_of_an_8k_window_with_1k_output() -> None:
    budget = make_budget(8192, 1024)
    total = 8192 - 1024  # 7168
    system, summary_share = total * 2 // 8, total * 1 // 8  # 1792, 896
    recent = min(total * 5 // 8, total - system - summary_share - 48)  # min(4480, 4432)
    assert (total, system, summary_share, recent) == (7168, 1792, 896, 4432)
    assert (budget.total, budget.system, budget.summary, budget.recent) == (7168, 1792, 896, 4432)
    assert budget.history == 896 + 4432


def test_split_of_a_9k_window_and_of_the_smallest_window() -> None:
    budget = make_budget(9216, 1024)  # total 8192: 2048 / 1024 / min(5120, 8192 - 3072 - 48 = 5072)
    assert (budget.total, budget.system, budget.summary, budget.recent) == (8192, 2048, 1024, 5072)
    smallest = make_budget(1280, 1024)  # total 256: 64 / 32 / min(160, 256 - 96 - 48 = 112)
    assert (smallest.total, smallest.system, smallest.summary, smallest.recent) == (
        256,
        64,
        32,
        112,
    )


def test_a_custom_split_is_scaled_to_its_sum() -> None:
    budget = make_budget(
        4096, 96, BudgetSplit(system=1, summary=1, recent=2)
    )  # total 4000, shares of 4
    assert (budget.total, budget.system, budget.summary, budget.recent) == (4000, 1000, 1000, 1952)


@pytest.mark.parametrize(("window", "output"), [(1279, 1024), (1000, 1000), (512, 600), (300, 45)])
def test_less_than_256_prompt_tokens_is_a_budget_error(window: int, output: int) -> None:
    with pytest.raises(BudgetError, match="lower the max output tokens") as caught:
        make_budget(window, output)
    assert isinstance(caught.value, ValueError)
    assert str(window - output) in str(caught.value)


def test_exactly_256_prompt_tokens_is_allowed() -> None:
    assert make_budget(300, 44).total == 256


def test_turn_cost_is_its_tokens_plus_the_heading_allowance() -> None:
    turn = make_turn(3, content="alpha beta gamma")
    assert turn["tokens"] == 3
    assert turn_cost(turn) == 3 + 24


# --- build_view: exact layout -----------------------------------------------------------------------------------


def request(
    turns,
    *,
    system="You are an architect.",
    task="Refine.",
    summ=None,
    since=0,
    to_seq=None,
    budget=None,
):
    return ViewRequest(
        system_prompt=system,
        task=task,
        summary=summ,
        newest_first=list(reversed(turns)),
        since=since,
        to_seq=to_seq if to_seq is not None else (turns[-1]["seq"] + 1 if turns else since),
        budget=budget or make_budget(8192, 1024),
    )


def test_the_view_shows_summary_then_history_oldest_first_then_task() -> None:
    turns = [
        make_turn(4, content="Use a token bucket.", round_no=1),
        make_turn(
            6,
            kind="critique",
            speaker="security",
            target="architect",
            content="Buckets leak.",
            round_no=1,
        ),
        make_turn(9, kind="refinement", content="Bucket per tenant.", round_no=2),
    ]
    view = build_view(
        request(turns, summ=summary("Earlier: quotas.", through=4), since=4, to_seq=11)
    )
    assert view.system == "You are an architect."
    assert view.user == (
        "## Summary of your earlier history\nEarlier: quotas.\n\n"
        "## Recent history, verbatim\n"
        "### Proposal by architect (round 1)\nUse a token bucket.\n\n"
        "### Critique by security of architect (round 1)\nBuckets leak.\n\n"
        "### Refinement by architect (round 2)\nBucket per tenant.\n\n"
        "## Your task\nRefine."
    )
    assert view.complete
    assert view.record == {
        "summary_id": "s1",
        "from_seq": 4,
        "to_seq": 11,
        "turns": 3,
        "prompt_tokens": count_messages(view.system, view.user),
        "budget_tokens": 8192 - 1024,
        "shortened": False,
    }


def test_without_summary_or_history_only_the_task_is_shown() -> None:
    view = build_view(request([], since=0, to_seq=0))
    assert view.user == "## Your task\nRefine."
    assert view.record["summary_id"] is None and view.record["turns"] == 0
    assert (view.record["from_seq"], view.record["to_seq"]) == (0, 0)
    assert view.complete


def test_newest_turns_are_kept_and_the_record_starts_at_the_oldest_shown() -> None:
    turns = [make_turn(i, content=marked(i, 40)) for i in range(40)]
    budget = make_budget(2048, 512)
    view = build_view(request(turns, budget=budget))
    shown = [t["seq"] for t in turns if t["content"] in view.user]
    assert shown and not view.complete
    assert shown == list(range(40 - len(shown), 40)), "a contiguous newest suffix"
    assert not any(f"[turn {i} begins]" in view.user for i in range(40 - len(shown)))
    assert view.record["from_seq"] == 40 - len(shown) and view.record["turns"] == len(shown)
    assert view.record["to_seq"] == 40
    assert view.record["prompt_tokens"] == count_messages(view.system, view.user) <= 2048 - 512


def test_one_huge_turn_is_shortened_visibly_keeping_head_and_tail() -> None:
    huge = make_turn(7, content=marked(7, 7000))
    view = build_view(request([huge], since=7, budget=make_budget(4096, 512)))
    assert view.record["shortened"] is True and view.complete
    assert "tokens shortened" in view.user
    assert "[turn 7 begins]" in view.user and "[turn 7 ends]" in view.user
    assert view.record["prompt_tokens"] <= 4096 - 512


def test_a_long_task_is_shortened_not_overflowed() -> None:
    view = build_view(request([], task="critique this " * 5000, budget=make_budget(2048, 256)))
    assert view.record["shortened"] and "tokens shortened" in view.user
    assert view.record["prompt_tokens"] <= 2048 - 256


def test_a_long_system_prompt_is_cut_to_half_its_slice() -> None:
    view = build_view(request([], system="role " * 5000, budget=make_budget(2048, 256)))
    assert count_tokens(view.system) <= (2048 - 256) * 2 // 8 // 2  # 224
    assert view.record["shortened"] and view.record["prompt_tokens"] <= 2048 - 256


def summary_block(view) -> str:  # noqa: ANN001
    return view.user.split("\n\n## Your task")[0].removeprefix(
        "## Summary of your earlier history\n"
    )


def test_a_summary_longer_than_its_share_is_shown_whole_in_the_room_of_the_oldest_turns() -> None:
    budget = make_budget(
        2048, 256
    )  # summary share: 1792 // 8 = 224; its room: 224 + 1072 // 2 = 760
    text = "summary words " * 200  # 400 tokens: past its share, within its room
    view = build_view(request([], summ=summary(text), budget=budget))
    assert summary_block(view) == text and not view.record["shortened"]


def test_only_a_summary_longer_than_its_whole_room_is_cut_and_says_so() -> None:
    budget = make_budget(2048, 256)  # room 760: a summary made for a wider window
    view = build_view(request([], summ=summary("summary words " * 2000), budget=budget))
    assert count_tokens(summary_block(view)) <= budget.summary_room
    assert view.record["shortened"] and view.record["summary_id"] == "s1"


def summary_tokens(record) -> int:  # noqa: ANN001
    return count_tokens(record["text"]) if record else 0


# --- build_view: properties ------------------------------------------------------------------------------------


@st.composite
def view_cases(draw):
    window = draw(st.integers(min_value=512, max_value=16384))
    output = draw(st.integers(min_value=16, max_value=window - 256))
    since = draw(st.integers(min_value=0, max_value=30))
    sizes = draw(st.lists(st.integers(min_value=0, max_value=1500), max_size=25))
    gaps = draw(
        st.lists(st.integers(min_value=0, max_value=3), min_size=len(sizes), max_size=len(sizes))
    )
    seqs, seq = [], since
    for gap in gaps:  # a perspective skips the turns of other perspectives
        seq += gap
        seqs.append(seq)
        seq += 1
    turns = [make_turn(s, content=marked(s, n)) for s, n in zip(seqs, sizes, strict=True)]
    to_seq = seq + draw(st.integers(min_value=0, max_value=3))
    summary_words = draw(st.integers(min_value=0, max_value=2000))
    return {
        "budget": make_budget(window, output),
        "turns": turns,
        "since": since,
        "to_seq": to_seq,
        "system": "role " * draw(st.integers(min_value=0, max_value=3000)),
        "task": "do the task " * draw(st.integers(min_value=0, max_value=3000)),
        "summ": summary("summary text " * summary_words, through=since) if summary_words else None,
    }


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(view_cases())
def test_no_view_exceeds_its_budget_and_its_record_is_what_it_shows(case) -> None:
    budget, turns = case["budget"], case["turns"]
    view = build_view(
        request(
            turns,
            system=case["system"],
            task=case["task"],
            summ=case["summ"],
            since=case["since"],
            to_seq=case["to_seq"],
            budget=budget,
        )
    )
    record = view.record
    # Never over budget, and the record's count is the prompt's.
    assert count_messages(view.system, view.user) <= budget.total
    assert record["prompt_tokens"] == count_messages(view.system, view.user)
    assert record["budget_tokens"] == budget.total
    assert record["to_seq"] == case["to_seq"]
    assert record["summary_id"] == ("s1" if case["summ"] else None)
    # from_seq / turns / complete agree with the turns whose text is in the prompt.
    shown = [t for t in turns if t["seq"] >= record["from_seq"]]
    hidden = [t for t in turns if t["seq"] < record["from_seq"]]
    assert record["turns"] == len(shown)
    for t in shown:
        assert f"[turn {t['seq']} begins]" in view.user, f"turn {t['seq']} is recorded as shown"
        assert t["content"] in view.user or record["shortened"]
    for t in hidden:
        assert (
            f"[turn {t['seq']} begins]" not in view.user
            and f"[turn {t['seq']} ends]" not in view.user
        )
    if view.complete:
        assert record["from_seq"] == case["since"] and not hidden
    else:
        assert hidden, "an incomplete view left a turn out"
        assert record["from_seq"] == (shown[0]["seq"] if shown else case["to_seq"])
    # The promise the overflow trigger relies on: turns that fit the room the summary leaves are all shown.
    if sum(t["tokens"] + 24 for t in turns) <= recent_room(budget, summary_tokens(case["summ"])):
        assert (
            view.complete and record["from_seq"] == case["since"] and record["turns"] == len(turns)
        )
        assert all(t["content"] in view.user for t in turns)


ROLES = [
    "architect",
    "performance",
    "security",
    "testing",
    "kiss",
    "generalist",
    "judge",
    "moderator",
    "user",
]
KINDS = ["proposal", "refinement", "critique", "briefing", "clarification", "message", "synthesis"]


@settings(max_examples=80, deadline=None)
@given(
    st.text(min_size=0, max_size=400),
    st.sampled_from(KINDS),
    st.sampled_from(ROLES),
    st.sampled_from(ROLES),
    st.integers(min_value=0, max_value=9999),
)
def test_a_rendered_turn_of_the_built_in_roles_never_costs_more_than_turn_cost(
    content, kind, speaker, target, round_no
) -> None:
    turn = make_turn(
        12345, kind=kind, speaker=speaker, target=target, content=content, round_no=round_no
    )
    assert count_tokens(render_turn(turn)) + 2 <= turn["tokens"] + 24


# Agent ids come from the config file's "id" field, which is free text.
LONG_A, LONG_B = (
    "principal_platform_architect_emea_region",
    "site_reliability_engineer_oncall_emea_region",
)


def test_turn_cost_bounds_the_heading_of_agents_with_long_ids() -> None:
    """ENGINE BUG (memory/budget.py turn_cost): a flat 24-token allowance under-counts long agent ids."""
    turn = make_turn(
        5, kind="critique", speaker=LONG_B, target=LONG_A, content="Quotas per tenant.", round_no=8
    )
    assert count_tokens(render_turn(turn)) + 2 <= turn_cost(turn)


def test_a_perspective_within_the_recent_slice_is_shown_whole_even_with_long_agent_ids() -> None:
    """ENGINE BUG: the overflow trigger lets through what the view then cannot show, so turns are forgotten."""
    budget = make_budget(4096, 512)
    turns, used = [], 0
    while True:  # as many critiques as the recent slice holds, by turn_cost
        turn = make_turn(
            len(turns),
            kind="critique",
            speaker=LONG_B,
            target=LONG_A,
            content=f"Point {len(turns)}: quotas.",
            round_no=100 + len(turns),
        )
        if used + turn_cost(turn) > recent_room(budget, budget.summary_room):  # as the trigger does
            break
        turns.append(turn)
        used += turn_cost(turn)
    view = build_view(
        request(
            turns,
            system="role " * 5000,
            task="task " * 5000,
            summ=summary("s " * 5000),
            budget=budget,
        )
    )
    assert view.complete and view.record["from_seq"] == 0, (
        f"turns 0..{view.record['from_seq'] - 1} left out"
    )


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(view_cases())
def test_turns_that_fit_the_recent_slice_are_all_shown_whatever_else_the_prompt_holds(case) -> None:
    budget, turns = case["budget"], list(case["turns"])
    while turns and sum(t["tokens"] + 24 for t in turns) > recent_room(
        budget, summary_tokens(case["summ"])
    ):
        turns.pop(0)  # the uncovered tail the overflow trigger allows beside the summary
    since = turns[0]["seq"] if turns else case["since"]
    view = build_view(
        request(
            turns,
            system=case["system"],
            task=case["task"],
            summ=case["summ"],
            since=since,
            to_seq=case["to_seq"],
            budget=budget,
        )
    )
    assert view.complete
    assert (view.record["from_seq"], view.record["turns"]) == (since, len(turns))
    assert all(t["content"] in view.user for t in turns)
    assert count_messages(view.system, view.user) <= budget.total


def test_a_summary_s_room_is_its_share_and_half_the_turns_and_a_short_one_leaves_the_turns_theirs() -> (
    None
):
    budget = make_budget(4096, 512)  # summary 448, recent 2192
    assert budget.summary_room == 448 + 1096
    assert recent_room(budget, budget.summary - 10) == budget.recent == recent_room(budget, 0)
    assert recent_room(budget, budget.summary + 100) == budget.recent - 100
    assert recent_room(budget, 10**6) == budget.recent - 1096, "never more than the room is counted"
