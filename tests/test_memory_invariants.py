"""The no-forgetting invariant, end to end: 40 rounds on the fake model, for both strategies.

Every model-written turn records what its prompt showed (``view``): its
summary covers every perspective turn before ``summary["through"]`` and the
prompt showed every perspective turn from ``from_seq`` to ``to_seq``
verbatim. Nothing is forgotten when the two meet: ``from_seq`` is where the
summary's coverage ends. Each summary, in turn, must have been given every
turn it claims to cover: its chain starts at seq 0 and each link reads on from
where its parent stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate

ROUNDS = 40
WINDOW, OUTPUT = 4096, 512
BUDGET_TOKENS = WINDOW - OUTPUT  # 3584
MAX_DEPTH = 3  # the settings' default maxSummaryChainDepth
AGENTS = ("architect", "performance", "security")
SHARED = {"briefing", "clarification", "message"}


def run(method: str) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL"):
            mp.delenv(name, raising=False)
        mp.setenv("DEBATE_MODEL", "fake")
        return compile_debate().invoke(
            {"problem": f"Design a rate limiter for tenant_51_9epxb ({method})"},
            {"configurable": {"thread_id": "x"}},
            context=Context(
                model="fake:words=100",
                rounds=ROUNDS,
                agents=",".join(AGENTS),
                context_window=WINDOW,
                max_output_tokens=OUTPUT,
                summary_method=method,
                summary_threshold=5000,
            ),  # the seed's character trigger: summaries every round
        )


@pytest.fixture(scope="module", params=["rolling", "fresh"])
def debate_run(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return request.param, run(request.param)


def visible(turn: dict[str, Any], viewer: str) -> bool:
    """Return the perspective rule, written out here rather than taken from the engine."""
    if turn["kind"] in SHARED:
        return True
    if viewer == "judge":
        return turn["kind"] != "synthesis"
    if turn["kind"] in ("proposal", "refinement"):
        return turn["speaker"] == viewer
    return turn["kind"] == "critique" and turn["target"] == viewer


def written(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in out["transcript"] if t["view"] is not None]


def chains(out: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for record in out["summary_log"]:
        by_agent.setdefault(record["agent_id"], []).append(record)
    return by_agent


def test_the_debate_ran_all_rounds_and_summarized(debate_run) -> None:
    method, out = debate_run
    transcript = out["transcript"]
    assert [t["seq"] for t in transcript] == list(range(len(transcript)))
    assert max(t["round"] for t in transcript) == ROUNDS
    assert transcript[-1]["kind"] == "synthesis" and transcript[-1]["view"] is not None
    assert out["solution"] is not None
    # 3 proposals, then per round 6 critiques and 3 refinements, then the synthesis.
    assert sum(
        t["kind"] in ("proposal", "critique", "refinement", "synthesis") for t in transcript
    ) == (3 + ROUNDS * (6 + 3) + 1)
    assert all(t["view"] is not None for t in transcript if t["model"] is not None)
    assert set(chains(out)) == {*AGENTS, "judge"}, "every perspective needed summaries"
    assert all(r["status"] == "ok" for r in out["summary_log"]), "the fake model never fails"
    assert {r["strategy"] for r in out["summary_log"]} == {method}


def test_every_view_fits_its_budget(debate_run) -> None:
    _, out = debate_run
    for turn in written(out):
        view = turn["view"]
        assert view["budget_tokens"] == BUDGET_TOKENS
        assert 0 < view["prompt_tokens"] <= BUDGET_TOKENS, turn["id"]


def test_every_view_was_built_when_its_phase_started(debate_run) -> None:
    _, out = debate_run
    transcript = out["transcript"]
    for turn in written(out):
        phase_start = min(
            t["seq"] for t in transcript if (t["kind"], t["round"]) == (turn["kind"], turn["round"])
        )
        assert turn["view"]["to_seq"] == phase_start <= turn["seq"], turn["id"]


def test_no_view_forgets_anything(debate_run) -> None:
    """The named summary covers exactly up to where the verbatim turns start."""
    _, out = debate_run
    log = {r["id"]: r for r in out["summary_log"]}
    assert len(log) == len(out["summary_log"]), "summary ids are unique"
    for turn in written(out):
        view = turn["view"]
        if view["summary_id"] is None:
            assert view["from_seq"] == 0, turn["id"]
            continue
        named = log.get(view["summary_id"])
        assert named is not None, f"{turn['id']} names a summary that is not in the log"
        assert named["status"] == "ok" and named["agent_id"] == turn["speaker"]
        assert named["through"] >= view["from_seq"], (
            f"{turn['id']}: turns {named['through']}..{view['from_seq']} lost"
        )
        assert view["from_seq"] == named["through"] <= view["to_seq"], turn["id"]


def test_every_view_shows_every_uncovered_perspective_turn(debate_run) -> None:
    _, out = debate_run
    transcript = out["transcript"]
    for turn in written(out):
        view, speaker = turn["view"], turn["speaker"]
        window = [t for t in transcript[view["from_seq"] : view["to_seq"]] if visible(t, speaker)]
        # a refinement's own position stays in its history (the task quotes it only when the history cannot show it)
        assert view["turns"] == len(window), turn["id"]


def test_the_synthesis_sees_the_whole_debate_through_its_summary(debate_run) -> None:
    _, out = debate_run
    synthesis = out["transcript"][-1]
    view = synthesis["view"]
    assert synthesis["speaker"] == "judge" and view["to_seq"] == synthesis["seq"]
    named = {r["id"]: r for r in out["summary_log"]}.get(view["summary_id"])
    assert named is not None, "40 rounds do not fit the judge's window without a summary"
    assert (
        named["status"] == "ok"
        and named["agent_id"] == "judge"
        and named["through"] == view["from_seq"]
    )
    assert view["turns"] == view["to_seq"] - view["from_seq"], (
        "the judge sees every turn but the synthesis"
    )
    assert view["prompt_tokens"] <= BUDGET_TOKENS


def test_every_summary_was_given_every_turn_it_covers(debate_run) -> None:
    """Each chain starts at seq 0 and each link reads on from its parent: nothing below ``through`` is skipped."""
    method, out = debate_run
    transcript = out["transcript"]
    rereads = 0
    for agent, records in chains(out).items():
        seen = [t for t in transcript if visible(t, agent)]
        previous = None
        for record in records:
            assert record["through"] <= len(transcript)
            if previous is not None:
                assert record["through"] >= previous["through"], (
                    f"{record['id']} covers less than its predecessor"
                )
            if record["parent_id"] is None:
                # A chain's start (or a fresh re-read) read the whole perspective below `through`.
                assert previous is None or method == "fresh", f"{record['id']} dropped its chain"
                rereads += previous is not None
                assert record["depth"] == 0
                material = sum(t["tokens"] for t in seen if t["seq"] < record["through"])
            else:
                assert previous is not None and record["parent_id"] == previous["id"], record["id"]
                material = previous["tokens_after"] + sum(
                    t["tokens"] for t in seen if previous["through"] <= t["seq"] < record["through"]
                )
            assert record["tokens_before"] == material, (
                f"{record['id']} was not given all it covers"
            )
            previous = record
    if method == "fresh":
        assert rereads > 0, "the fresh strategy re-read a whole perspective at least once"


def test_the_chain_restarts_at_its_depth_cap(debate_run) -> None:
    method, out = debate_run
    restarts = 0
    for records in chains(out).values():
        for parent, record in zip(records, records[1:], strict=False):
            if record["parent_id"] is None:
                continue
            if parent["depth"] + 1 > MAX_DEPTH:
                assert record["depth"] == 0 and "depth cap" in record["reason"], record["id"]
                restarts += 1
            else:
                assert (
                    record["depth"] == parent["depth"] + 1 and "depth cap" not in record["reason"]
                ), record["id"]
        assert max(r["depth"] for r in records) <= MAX_DEPTH
    assert restarts > 0, f"40 rounds with a 4K window reach the depth cap ({method})"


def test_no_view_forgets_with_long_agent_ids_and_full_prompts(tmp_path: Path) -> None:
    """ENGINE BUG reproduction: config ids are free text; with long ones ``turn_cost`` under-counts each
    critique's heading, so when system prompt, task and summary fill their slices and only the overflow rule
    is on, a view leaves out turns its summary does not cover."""
    ids = (
        "principal_platform_architect_emea_region",
        "site_reliability_engineer_oncall_emea_region",
        "application_security_reviewer_emea_region",
    )
    system = tmp_path / "system.md"
    system.write_text("You are a careful reviewer. " * 400)
    config = tmp_path / "debate.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": i, "role": r, "systemPromptPath": str(system)}
                    for i, r in zip(ids, AGENTS, strict=True)
                ],
                "debate": {
                    "rounds": 9,
                    "summarization": {"threshold": 0, "triggerTokenRatio": 2.0},
                },
            }
        )
    )
    out = compile_debate().invoke(
        {"problem": "Design a rate limiter. " + "Requirement: tenants share quotas fairly. " * 400},
        {"configurable": {"thread_id": "long-ids"}},
        context=Context(
            model="fake:words=40",
            config_file=str(config),
            context_window=2048,
            max_output_tokens=256,
        ),
    )
    log = {r["id"]: r for r in out["summary_log"]}

    def covered(turn: dict[str, Any]) -> int:
        named = turn["view"]["summary_id"]
        return log[named]["through"] if named else 0

    lost = [
        (t["id"], covered(t), t["view"]["from_seq"])
        for t in written(out)
        if t["view"]["from_seq"] != covered(t)
    ]
    assert not lost, f"views that skipped turns (id, summary covers below, view starts at): {lost}"
