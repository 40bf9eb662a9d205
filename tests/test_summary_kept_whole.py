"""A summary the run paid for reaches the prompts whole: asked within the room a view gives it, read whole by the
next fold, its facet items all kept, the shorter of two answers stored, and plain words never lost to a cut.

Each test here fails under one of the one-line changes that once passed every test (issue 39): reading the
previous summary through its share only, the lifter without its digit rule, a new facet list cut to its cap,
keeping a re-asked answer that came back longer, facets taking the narrative's room, a looser over-length check.
"""

from __future__ import annotations

from typing import Any

from debate_engine.memory import count_tokens, make_budget
from debate_engine.memory.facets import FACET_CAPS, empty_facets, merge_facets, render_summary
from debate_engine.memory.identifiers import lift
from debate_engine.memory.strategies import Plan
from debate_engine.memory.summarizer import summarize
from debate_engine.memory.summary_prompt import allowance, text_slot
from tests.conftest import make_turn
from tests.support.summary_jobs import BIG, job

PLAIN = "the shard key is amber heron"
"""A fact no identifier rule lifts: only the summary's text keeps it."""


class Answer:
    """A structured answer as the road hands it back."""

    def __init__(self, narrative: str, **facets: list[str]) -> None:
        self.text, self.truncated = narrative, False
        self.parsed: dict[str, Any] = {**empty_facets(), **facets, "narrative": narrative}
        self.attempts = [
            {"model": "fake", "outcome": "ok", "usage": None, "latency_ms": 1, "error": None}
        ]


def previous_summary(narrative: str) -> dict[str, Any]:
    text = render_summary(narrative, empty_facets())
    return {
        "id": "sum-architect-r2-4",
        "agent_id": "architect",
        "depth": 0,
        "parent_id": None,
        "status": "ok",
        "text": text,
        "narrative": narrative,
        "facets": empty_facets(),
        "through": 4,
        "tokens_after": count_tokens(text),
        "identifier_stats": {},
        "identifiers_dropped": 0,
    }


def sentences(tokens: int) -> str:
    """Plain prose of about ``tokens`` tokens, ending with the plain-words fact."""
    filler = "The team weighed the queue against the cache and kept both for now. "
    return filler * (tokens // count_tokens(filler)) + PLAIN.capitalize() + "."


def test_a_fold_reads_the_previous_summary_whole_though_it_is_longer_than_its_share() -> None:
    old = previous_summary(sentences(2 * BIG.summary))  # past its share, within its room
    assert BIG.summary < old["tokens_after"] <= BIG.summary_room
    turns = [make_turn(i) for i in range(4, 8)]
    plan = Plan(fold=old, turns=turns, through=8, depth=1, parent_id=old["id"])  # type: ignore[arg-type]
    prompt = next(summarize(job(plan)))
    assert old["narrative"] in prompt.user and PLAIN.capitalize() in prompt.user


def test_the_request_s_output_allowance_never_exceeds_the_room_its_summary_is_shown_in() -> None:
    small = make_budget(2048, 768)  # 768 output tokens; the summary's room is 320 + 384
    plan = Plan(
        fold=None, turns=[make_turn(i) for i in range(3)], through=3, depth=0, parent_id=None
    )
    the_job = job(plan, budget=small, max_output_tokens=768)
    prompt = next(summarize(the_job))
    assert prompt.max_tokens == allowance(the_job, prompt_identifiers(the_job)) < 768
    assert prompt.max_tokens <= small.summary_room - the_job.budget.summary // 4


def prompt_identifiers(the_job: Any) -> int:
    from debate_engine.memory.identifiers import line, ranked
    from debate_engine.memory.summarizer import _identifiers

    return count_tokens(line(ranked(_identifiers(the_job)[0])))


def test_the_lifter_keeps_names_whose_only_mark_is_a_digit() -> None:
    assert lift("Pin x9k4q, then route node7 through build 2024b.") == ["x9k4q", "node7", "2024b"]


def test_the_lifter_keeps_money_names_and_bare_numbers_with_their_subject_not_plain_words() -> None:
    text = (
        "The shard key is amber heron. The replica count 2 is 4817. The owner is Marta Okonkwo, "
        "the cap is $2,340. It is 12."
    )
    assert lift(text) == ["replica count 2 is 4817", "Marta Okonkwo", "$2,340"]


def test_every_facet_item_the_model_wrote_is_kept_past_the_cap() -> None:
    items = [f"point {i}: {PLAIN} {i}" for i in range(FACET_CAPS["key_points"] + 5)]
    merged = merge_facets(None, {**empty_facets(), "key_points": items})
    assert merged["key_points"] == items


def test_facets_never_take_the_narrative_s_room_when_a_summary_must_be_shortened() -> None:
    facets = {**empty_facets(), "key_points": [f"point {i:02d} " * 7 for i in range(13)]}
    assert 820 < len(render_summary("", facets)) < 880  # the facets alone would fill the room
    shown = render_summary(f"{PLAIN.capitalize()}. " + "More prose follows. " * 40, facets, 880)
    assert PLAIN.capitalize() in shown and len(shown) <= 880


def steps_of(
    answers: list[int | Answer | Exception], retries: int = 2
) -> tuple[list[Any], dict[str, Any], list[int]]:
    """Answer a summary's prompts in turn (a size: a narrative of about that many tokens; an exception: the
    request failed); return the prompts, the record and the lengths the instructions asked for."""
    plan = Plan(
        fold=None, turns=[make_turn(i) for i in range(4)], through=4, depth=0, parent_id=None
    )
    lengths: list[int] = []
    steps = summarize(job(plan, retries=retries, lengths=lengths))
    prompts = [next(steps)]
    try:
        for given in answers:
            if isinstance(given, Exception):
                prompts.append(steps.throw(given))
            else:
                answer = given if isinstance(given, Answer) else Answer(sentences(given))
                prompts.append(steps.send(answer))
    except StopIteration as done:
        return prompts, done.value, lengths
    raise AssertionError(f"the summarizer asked {len(prompts)} prompts for {len(answers)} answers")


def room_of() -> int:
    """Tokens the test job's answer may render to: its room less its identifiers (``rate_limiter.py``)."""
    the_job = job(Plan(None, [make_turn(i) for i in range(4)], 4, 0, None))
    return text_slot(the_job, prompt_identifiers(the_job))


def test_an_answer_half_again_as_long_as_its_room_is_asked_again_within_the_room_it_left() -> None:
    room = room_of()
    prompts, record, lengths = steps_of([int(room * 1.5), room // 2])
    size = count_tokens(sentences(int(room * 1.5)))
    first, second = prompts[0].max_tokens, prompts[1].max_tokens
    assert len(prompts) == 2
    assert first * room / size * 0.8 <= second <= first * room / size, (
        "scaled to fit, not needlessly"
    )
    asked, again = lengths[
        -2:
    ]  # the first prompt's length and the second's (the frame asks one too)
    assert asked * room / size * 0.8 <= again <= asked * room / size
    assert record["tokens_after"] <= BIG.summary_room


def test_an_answer_exactly_as_long_as_its_room_is_kept_at_once() -> None:
    room = room_of()
    narrative = "Kept."
    while count_tokens(narrative) < room:
        narrative += " kept"
    assert count_tokens(narrative) == room
    prompts, record, _ = steps_of([Answer(narrative)])
    assert len(prompts) == 1 and record["narrative"] == narrative


def lead(text: str, tokens: int) -> Answer:
    return Answer(f"{text} {sentences(tokens)}")


def test_a_re_asked_answer_that_came_back_longer_is_not_kept_over_the_shorter_one() -> None:
    room = room_of()
    first, second, third = int(room * 1.3), int(room * 1.8), int(room * 2.2)
    # the shortest answer sorts last by its text: it is chosen by its size, nothing else
    answers: list[int | Answer | Exception] = [
        lead("Zulu.", first),
        lead("Alpha.", second),
        lead("Bravo.", third),
    ]
    prompts, record, _ = steps_of(answers)
    assert len(prompts) == 3
    assert record["narrative"].startswith("Zulu."), "the shortest answer is kept, whole"


def test_after_a_long_answer_a_failed_or_cut_request_keeps_it_and_asks_no_more() -> None:
    room = room_of()
    failed = ConnectionError("the second request failed")
    prompts, record, _ = steps_of([int(room * 1.5), failed])
    assert len(prompts) == 2 and record["status"] == "ok"
    cut = Answer("They chose")
    cut.truncated = True
    prompts, record, _ = steps_of([int(room * 1.5), cut])
    assert len(prompts) == 2 and record["narrative"] == sentences(int(room * 1.5)).strip()


def test_facet_items_past_the_schema_s_bounds_are_kept_and_named_in_the_record() -> None:
    plan = Plan(
        fold=None, turns=[make_turn(i) for i in range(4)], through=4, depth=0, parent_id=None
    )
    steps = summarize(job(plan))
    next(steps)
    items = [f"{PLAIN} {i}" for i in range(FACET_CAPS["key_points"] + 3)]
    answer = Answer("They chose a token bucket.", key_points=items)
    answer.clamped = ["key_points"]  # type: ignore[attr-defined]
    try:
        steps.send(answer)
    except StopIteration as done:
        record = done.value
    assert record["facets"]["key_points"] == items and record["clamped"] == ["key_points"]


def test_the_clamped_fields_are_named_on_the_attempt_that_went_past_the_bounds() -> None:
    clamped = Answer("They chose a token bucket.", key_points=["a point"])
    clamped.clamped = ["narrative"]  # type: ignore[attr-defined]
    _, record, _ = steps_of([int(room_of() * 1.5), clamped])
    first, second = record["attempts"]
    assert "clamped" not in first and second["clamped"] == ["narrative"]


def test_the_identifiers_shown_come_out_of_the_answer_s_room() -> None:
    the_job = job(Plan(None, [], 0, 0, None))
    assert text_slot(the_job, 100) == text_slot(the_job, 0) - 100


def test_a_summary_may_ask_again_after_an_empty_reply_only_when_its_job_allows_retries() -> None:
    plan = Plan(
        fold=None, turns=[make_turn(i) for i in range(3)], through=3, depth=0, parent_id=None
    )
    assert next(summarize(job(plan, retries=1))).retry
    assert next(summarize(job(plan, retries=2))).retry
    assert not next(summarize(job(plan, retries=0))).retry


def test_the_longest_summary_a_job_can_store_is_within_its_fold_bound() -> None:
    """What the spend reserve counts a fold as: never less than the longest summary, never far more."""
    from debate_engine.memory.summary_prompt import SUMMARY_MARGIN, fold_bound

    plan = Plan(
        fold=None, turns=[make_turn(i) for i in range(4)], through=4, depth=0, parent_id=None
    )
    the_job = job(plan, retries=0)
    steps = summarize(the_job)
    next(steps)
    room = text_slot(the_job, prompt_identifiers(the_job))
    try:
        steps.send(Answer(sentences(room - 8)))
    except StopIteration as done:
        record = done.value
    assert BIG.summary < record["tokens_after"] <= fold_bound(the_job)
    assert fold_bound(the_job) <= BIG.summary_room + SUMMARY_MARGIN


def test_the_lifter_keeps_a_bare_percentage_and_a_key_with_its_value() -> None:
    assert lift("Send a 5% canary, and x=30 holds.") == ["5%", "x=30"]
