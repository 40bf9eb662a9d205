"""Every turn of every debate is numbered, kept within its budget and shown only its own perspective."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from debate_engine import Context, compile_debate
from debate_engine.memory import perspective
from tests.support.graph_runs import Prompts

ROLES = ("architect", "performance", "security", "testing", "kiss")


def history_headings(user: str) -> list[str]:
    """Return the headings of the verbatim history section of a prompt."""
    if "## Recent history, verbatim" not in user:
        return []
    section = user.split("## Recent history, verbatim", 1)[1].split("## Your task", 1)[0]
    return re.findall(r"^### (.+)$", section, re.M)


def allowed_heading(heading: str, viewer: str) -> bool:
    """Return what ``viewer`` may see verbatim: its own positions, critiques of itself, the shared clarifications."""
    if heading.startswith("Clarifications asked by "):
        return True
    if m := re.fullmatch(r"(Proposal|Refinement) by (\S+) \(round \d+\)", heading):
        return m.group(2) == viewer
    if m := re.fullmatch(r"Critique by (\S+) of (\S+) \(round \d+\)", heading):
        return m.group(2) == viewer and m.group(1) != viewer
    return False


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n_agents=st.integers(1, 3),
    rounds=st.integers(1, 3),
    words=st.sampled_from([20, 250]),
    window=st.sampled_from([2048, 8192]),
)
@example(n_agents=3, rounds=3, words=250, window=2048)  # summaries before nearly every phase
def test_every_turn_is_numbered_budgeted_and_sees_only_its_perspective(
    n_agents: int, rounds: int, words: int, window: int
) -> None:
    agents = ROLES[:n_agents]
    spy = Prompts()
    out = compile_debate().invoke(
        {"problem": "Design a rate limiter for rate_limiter.py"},
        {"configurable": {"thread_id": "inv"}, "callbacks": [spy]},
        context=Context(
            model=f"fake:words={words}",
            agents=",".join(agents),
            rounds=rounds,
            context_window=window,
            max_output_tokens=512,
        ),
    )
    transcript = out["transcript"]
    assert [t["seq"] for t in transcript] == list(range(len(transcript)))
    assert len({t["id"] for t in transcript}) == len(transcript)
    many = n_agents > 1
    per_round = n_agents + (n_agents * (n_agents - 1) if many else 0)  # refinements (+ critiques)
    assert len(transcript) == n_agents + rounds * per_round + 1

    summaries = {s["id"]: s for s in out["summary_log"]}
    for turn in transcript:
        view = turn["view"]
        assert view is not None, turn["id"]
        assert view["budget_tokens"] == window - 512
        assert view["prompt_tokens"] <= view["budget_tokens"]
        assert view["to_seq"] <= turn["seq"]
        speaker = turn["speaker"]
        summary = summaries.get(view["summary_id"]) if view["summary_id"] else None
        if view["summary_id"]:
            assert (
                summary is not None and summary["agent_id"] == speaker and summary["status"] == "ok"
            )
            assert summary["through"] <= view["to_seq"]
        # no forgetting: the verbatim part starts where the summary's coverage ends (or earlier)
        assert view["from_seq"] <= (summary["through"] if summary else 0), turn["id"]
        shown = [
            t
            for t in perspective(transcript[: view["to_seq"]], speaker)
            if t["seq"] >= view["from_seq"]
        ]
        assert view["turns"] == len(shown), turn[
            "id"
        ]  # a refinement's own position too: it stays in the history

    views = {(t["speaker"], t["kind"], t["round"]): t["view"] for t in transcript}
    agent_calls = [
        c for c in spy.calls.values() if c["agent_id"] in agents and "summarizer" not in c["tags"]
    ]
    assert len(agent_calls) == len(transcript) - 1
    for call in agent_calls:
        headings = history_headings(call["user"])
        assert all(allowed_heading(h, call["agent_id"]) for h in headings), (
            call["agent_id"],
            headings,
        )
        assert len(headings) == views[(call["agent_id"], call["kind"], call["round"])]["turns"]
