"""Strategies and planning: what a summary reads, turn by turn, before any model is asked."""

from __future__ import annotations

import pytest

from debate_engine.memory import SummarizationSettings, summary_material
from debate_engine.memory.strategies import Fresh, Plan, Rolling, get_strategy, keep_recent
from tests.conftest import make_turn
from tests.support.summary_jobs import BIG, SMALL
from tests.test_budget import marked, summary


def seqs(turns) -> list[int]:
    return [t["seq"] for t in turns]


def own(seq_list: list[int]):
    return [make_turn(s, speaker="architect") for s in seq_list]


# --- strategies ---------------------------------------------------------------------------------------------


def test_rolling_folds_the_previous_summary_and_keeps_the_newest_verbatim() -> None:
    uncovered = own([3, 5, 7, 9, 11])
    prev = summary("before", through=3, depth=1, ident="p")
    plan = Rolling(max_depth=3).plan(uncovered, prev, keep=2, whole=None)
    assert plan.fold is prev and seqs(plan.turns) == [3, 5, 7]
    assert plan.through == 9, "the seq of the first kept turn"
    assert (plan.depth, plan.parent_id, plan.restarted) == (2, "p", False)


def test_rolling_with_nothing_kept_covers_through_the_newest_turn() -> None:
    plan = Rolling().plan(
        own([3, 5, 7, 9, 11]), summary("before", through=3, ident="p"), keep=0, whole=None
    )
    assert seqs(plan.turns) == [3, 5, 7, 9, 11] and plan.through == 12


def test_the_first_rolling_summary_has_no_parent() -> None:
    plan = Rolling().plan(own([0, 2, 4]), None, keep=1, whole=None)
    assert (plan.fold, seqs(plan.turns), plan.through, plan.depth, plan.parent_id) == (
        None,
        [0, 2],
        4,
        0,
        None,
    )


def test_rolling_when_everything_uncovered_is_kept_covers_what_it_covered() -> None:
    plan = Rolling().plan(own([3, 5]), summary("before", through=3, ident="p"), keep=2, whole=None)
    assert plan.turns == [] and plan.through == 3


def test_rolling_with_nothing_uncovered_keeps_the_previous_coverage() -> None:
    plan = Rolling().plan([], summary("before", through=12, ident="p"), keep=2, whole=None)
    assert plan.turns == [] and plan.through == 12 and plan.fold is not None


@pytest.mark.parametrize(
    ("max_depth", "prev_depth", "depth", "restarted"),
    [(3, 2, 3, False), (3, 3, 0, True), (0, 0, 0, True), (5, 4, 5, False)],
)
def test_at_max_depth_the_chain_restarts_instead_of_stopping(
    max_depth, prev_depth, depth, restarted
) -> None:
    prev = summary("before", through=3, depth=prev_depth, ident="p")
    plan = Rolling(max_depth=max_depth).plan(own([3, 5, 7]), prev, keep=1, whole=None)
    assert (plan.depth, plan.restarted) == (depth, restarted)
    assert plan.parent_id == "p" and plan.fold is prev, "a restart still folds what the chain knew"
    assert seqs(plan.turns) == [3, 5] and plan.through == 7


def test_fresh_rereads_the_whole_perspective_when_given() -> None:
    whole = own([0, 1, 3, 5, 7, 9, 11])
    prev = summary("before", through=7, depth=2, ident="p")
    plan = Fresh().plan(whole[4:], prev, keep=2, whole=whole)
    assert plan.fold is None and seqs(plan.turns) == [0, 1, 3, 5, 7] and plan.through == 9
    assert (plan.depth, plan.parent_id, plan.restarted) == (0, None, False)
    assert Fresh().plan(whole[4:], prev, keep=0, whole=whole).through == 12


def test_fresh_without_the_whole_perspective_folds_like_rolling() -> None:
    uncovered = own([7, 9, 11])
    prev = summary("before", through=7, depth=3, ident="p")
    plan = Fresh(max_depth=3).plan(uncovered, prev, keep=1, whole=None)
    assert plan.fold is prev and seqs(plan.turns) == [7, 9] and plan.through == 11
    assert (plan.depth, plan.parent_id, plan.restarted) == (0, "p", True)


def test_strategies_by_name() -> None:
    assert (
        isinstance(get_strategy("rolling", 2), Rolling)
        and get_strategy("rolling", 2).max_depth == 2
    )
    assert isinstance(get_strategy("fresh"), Fresh)
    with pytest.raises(ValueError, match="unknown summary strategy 'magic'"):
        get_strategy("magic")


def test_keep_recent_keeps_at_most_preserve_and_only_what_fits() -> None:
    turns = [
        make_turn(i, content=" ".join(["word"] * 10 * (i + 1))) for i in range(4)
    ]  # 10, 20, 30, 40 tokens
    newest_two = (40 + 24) + (30 + 24)
    assert keep_recent(turns, 2, 10_000) == 2
    assert keep_recent(turns, 3, 10_000) == 3
    assert keep_recent(turns, 0, 10_000) == 0
    assert keep_recent(turns, 2, newest_two) == 2
    assert keep_recent(turns, 2, newest_two - 1) == 1
    assert keep_recent(turns, 2, 40 + 24 - 1) == 0


# --- planning: summary_material -------------------------------------------------------------------------------


def debate_transcript(rounds: int = 3, words: int = 30):
    """Briefing, then per round: two refinements and two crossed critiques."""
    out = [make_turn(0, kind="briefing", speaker="moderator", content=marked(0, words))]
    for r in range(1, rounds + 1):
        for kind, speaker, target in (
            ("refinement", "architect", None),
            ("refinement", "security", None),
            ("critique", "security", "architect"),
            ("critique", "architect", "security"),
        ):
            seq = len(out)
            out.append(
                make_turn(
                    seq,
                    kind=kind,
                    speaker=speaker,
                    target=target,
                    round_no=r,
                    content=marked(seq, words),
                )
            )
    return out


def architect_view(transcript) -> list[int]:
    """Return what the architect sees, by the rule: shared kinds, its own positions, critiques aimed at it."""
    return [
        t["seq"]
        for t in transcript
        if t["kind"] == "briefing"
        or (t["kind"] == "refinement" and t["speaker"] == "architect")
        or (t["kind"] == "critique" and t["target"] == "architect")
    ]


def test_rolling_material_is_every_uncovered_turn_but_the_kept_tail() -> None:
    transcript = debate_transcript()
    seen = architect_view(transcript)
    assert seen == [0, 1, 3, 5, 7, 9, 11]
    s = SummarizationSettings(preserve_recent=2)
    first = summary_material(transcript, "architect", None, s, BIG)
    assert first.strategy == "rolling" and first.plan.fold is None
    assert seqs(first.plan.turns) == [0, 1, 3, 5, 7] and first.plan.through == 9
    prev = summary("before", through=5, ident="p")
    later = summary_material(transcript, "architect", prev, s, BIG)
    assert later.plan.fold is prev and seqs(later.plan.turns) == [5, 7] and later.plan.through == 9


def test_fresh_material_is_the_whole_perspective_when_it_fits_the_recent_slice() -> None:
    transcript = debate_transcript()
    s = SummarizationSettings(method="fresh", preserve_recent=1)
    prev = summary("before", through=5, ident="p")
    small = summary_material(transcript, "architect", prev, s, BIG)
    assert small.strategy == "fresh" and small.plan.fold is None
    assert seqs(small.plan.turns) == [0, 1, 3, 5, 7, 9] and small.plan.through == 11
    long = debate_transcript(
        rounds=3, words=300
    )  # 7 turns of ~900 tokens: more than BIG.recent (4432)
    assert sum(t["tokens"] + 24 for t in long if t["seq"] in architect_view(long)) > BIG.recent
    folded = summary_material(long, "architect", prev, s, BIG)
    assert (
        folded.plan.fold is prev
        and seqs(folded.plan.turns) == [5, 7, 9]
        and folded.plan.through == 11
    )


def test_the_kept_tail_is_limited_by_half_the_recent_slice() -> None:
    transcript = debate_transcript(rounds=3, words=100)  # ~300 tokens a turn
    per_turn = transcript[11]["tokens"] + 24
    assert per_turn > SMALL.recent // 2
    material = summary_material(
        transcript, "architect", None, SummarizationSettings(preserve_recent=2), SMALL
    )
    assert material.plan.through == 12 and seqs(material.plan.turns) == architect_view(transcript)


def test_with_nothing_to_summarize_the_plan_covers_nothing() -> None:
    material = summary_material([], "architect", None, SummarizationSettings(), BIG)
    assert material.plan == Plan(fold=None, turns=[], through=0, depth=0, parent_id=None)
