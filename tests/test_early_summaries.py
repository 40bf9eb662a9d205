"""Summaries off the critical path: a summary the next step needs is made beside the phase before it.

The judge's summary before the synthesis is made beside the last refinements, so no summarize step stands
between them; its coverage ends where those refinements begin, and the synthesis sees every turn after it
verbatim. The memory invariants of ``test_memory_invariants`` hold for such a debate, and a crash in the
middle of a phase with summaries beside it resumes to the same debate.
"""

from __future__ import annotations

from typing import Any

import pytest

from debate_engine import Context, compile_debate
from debate_engine.nodes import summaries
from tests.test_memory_invariants import visible, written

ROUNDS, WINDOW, OUTPUT = 3, 4096, 1024
AGENTS = "architect,performance,security"


def context() -> Context:
    return Context(model="fake:words=200", agents=AGENTS, rounds=ROUNDS, context_window=WINDOW)


def run(thread: str = "t") -> tuple[list[str], dict[str, Any]]:
    """Return the debate's node updates in order, and its final values."""
    graph, config = compile_debate(), {"configurable": {"thread_id": thread}}
    nodes = [
        node
        for update in graph.stream(
            {"problem": "Design a rate limiter"}, config, context=context(), stream_mode="updates"
        )
        for node in update
    ]
    return [
        n for n in nodes if n in ("summarize", "propose", "critique", "refine", "synthesize")
    ], dict(graph.get_state(config).values)


@pytest.fixture(scope="module")
def early() -> tuple[list[str], dict[str, Any]]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL"):
            mp.delenv(name, raising=False)
        mp.setenv("DEBATE_MODEL", "fake")
        return run()


def test_the_judges_summary_is_made_beside_the_last_refinements(early) -> None:
    nodes, out = early
    assert nodes[-2:] == ["refine", "synthesize"], nodes
    assert "summarize" not in nodes, "every summary of this debate could be made beside a phase"
    last_refine = min(
        t["seq"] for t in out["transcript"] if (t["kind"], t["round"]) == ("refinement", ROUNDS)
    )
    synthesis = out["transcript"][-1]
    named = next(r for r in out["summary_log"] if r["id"] == synthesis["view"]["summary_id"])
    assert (
        named["agent_id"] == "judge" and f"(made ahead of {ROUNDS}:synthesize)" in named["reason"]
    )
    assert named["through"] <= last_refine, (
        "nothing the refinements wrote is claimed by the summary"
    )
    view = synthesis["view"]
    assert view["from_seq"] == named["through"] and view["to_seq"] == synthesis["seq"]
    assert view["turns"] == view["to_seq"] - view["from_seq"], (
        "the judge sees every turn after its summary"
    )


BEFORE = {
    "refine": ("critique", 0),
    "critique": ("refinement", -1),
    "synthesize": ("refinement", 0),
}
"""The phase a summary for a step is made beside: its turns' kind and round, relative to the step's."""


def test_every_summary_made_ahead_covers_only_what_existed_when_its_phase_began(early) -> None:
    _, out = early
    transcript = out["transcript"]
    ahead = [r for r in out["summary_log"] if summaries.AHEAD in r["reason"]]
    assert len(ahead) == len(out["summary_log"]) > 0
    for record in ahead:
        round_no, step = record["reason"].split(summaries.AHEAD)[1].split(")")[0].split(":")
        kind, back = BEFORE[step]
        if (kind, int(round_no) + back) == ("refinement", 0):
            kind, back = "proposal", 0
        began = min(
            t["seq"] for t in transcript if (t["kind"], t["round"]) == (kind, int(round_no) + back)
        )
        assert record["through"] <= began, f"{record['id']} claims turns its phase had not written"


def test_views_fit_and_forget_nothing(early) -> None:
    _, out = early
    log = {r["id"]: r for r in out["summary_log"]}
    transcript = out["transcript"]
    for turn in written(out):
        view = turn["view"]
        assert 0 < view["prompt_tokens"] <= WINDOW - OUTPUT, turn["id"]
        covered = log[view["summary_id"]]["through"] if view["summary_id"] else 0
        assert view["from_seq"] == covered <= view["to_seq"], turn["id"]
        shown = [
            t for t in transcript[view["from_seq"] : view["to_seq"]] if visible(t, turn["speaker"])
        ]
        # a refinement's own current proposal is shown in its history or quoted in its task
        quoted = turn["kind"] == "refinement" and any(
            t["speaker"] == turn["speaker"] for t in shown
        )
        assert view["turns"] in ({len(shown), len(shown) - 1} if quoted else {len(shown)}), turn[
            "id"
        ]


def test_a_crash_beside_a_phase_resumes_to_the_same_debate(
    early, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, whole = early
    made = summaries.summarize
    crashed: list[str] = []

    def crash_once(job: Any, **kwargs: Any) -> Any:
        if summaries.AHEAD in job.reason and not crashed:
            crashed.append(job.agent_id)
            raise RuntimeError("killed while a summary was made beside a phase")
        return made(job, **kwargs)

    monkeypatch.setattr(summaries, "summarize", crash_once)
    graph, config = compile_debate(), {"configurable": {"thread_id": "k"}}
    with pytest.raises(RuntimeError, match="killed"):
        graph.invoke({"problem": "Design a rate limiter"}, config, context=context())
    out = graph.invoke(None, config)
    assert crashed
    fields = ("id", "content", "view")
    assert [[t[f] for f in fields] for t in out["transcript"]] == [
        [t[f] for f in fields] for t in whole["transcript"]
    ]
    fields = ("agent_id", "through", "text", "reason")
    assert [[r[f] for f in fields] for r in out["summary_log"]] == [
        [r[f] for f in fields] for r in whole["summary_log"]
    ]
