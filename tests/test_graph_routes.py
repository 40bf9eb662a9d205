"""The routers are pure functions of plain state, and the drawing has one node per phase."""

from __future__ import annotations

import re
from typing import Any

from debate_engine import compile_debate
from debate_engine.nodes.routes import after_setup, after_summarize, route


def profile(agent_id: str, summarization: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": agent_id,
        "role": "architect",
        "context_window": 8192,
        "max_output_tokens": 1024,
        "summarization": summarization or {"enabled": False},
    }


def state(
    phase: str,
    round_no: int,
    *,
    agents: int = 2,
    rounds: int = 2,
    clarify: bool = False,
    max_questions: int = 3,
    transcript: list[Any] | None = None,
    summarized_for: str = "",
    summarization: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "phase": phase,
        "round": round_no,
        "summarized_for": summarized_for,
        "transcript": transcript or [],
        "summary_log": [],
        "settings": {
            "agents": [profile(f"a{i}", summarization) for i in range(agents)],
            "judge": profile("judge", summarization),
            "rounds": rounds,
            "clarify": clarify,
            "max_questions": max_questions,
            "max_concurrency": 0,
        },
    }


def proposed(agents: int) -> list[Any]:
    """Round 1's proposals of agents ``a0``, ``a1``, ..."""
    from tests.conftest import make_turn

    return [make_turn(i, speaker=f"a{i}", kind="proposal", round_no=1) for i in range(agents)]


def test_routers_are_pure_functions_of_plain_state() -> None:
    assert after_setup(state("setup", 0, clarify=True)) == "clarify"  # type: ignore[arg-type]
    assert after_setup(state("setup", 0, clarify=True, max_questions=0)) == "propose"  # type: ignore[arg-type]
    assert after_setup(state("setup", 0)) == "propose"  # type: ignore[arg-type]
    assert route(state("clarify", 0)) == "propose"  # type: ignore[arg-type]
    assert route(state("propose", 1)) == "critique"  # type: ignore[arg-type]
    assert route(state("propose", 1, agents=1)) == "refine"  # type: ignore[arg-type]
    assert route(state("critique", 1)) == "refine"  # type: ignore[arg-type]
    assert route(state("refine", 1, transcript=proposed(2))) == "critique"  # type: ignore[arg-type]
    assert route(state("refine", 1, agents=1, transcript=proposed(1))) == "refine"  # type: ignore[arg-type]
    assert (
        route(state("refine", 1, agents=3, transcript=proposed(2))) == "propose"
    )  # a2, added at a fork
    assert route(state("refine", 2)) == "synthesize"  # type: ignore[arg-type]
    assert after_summarize(state("propose", 1, summarized_for="1:critique")) == "critique"  # type: ignore[arg-type]
    assert after_summarize(state("refine", 2, summarized_for="2:synthesize")) == "synthesize"  # type: ignore[arg-type]


def test_a_due_summary_is_routed_to_once_per_phase() -> None:
    from tests.conftest import make_turn

    long = [
        make_turn(i, speaker="a0", kind="proposal", round_no=1, content="x" * 3000)
        for i in range(3)
    ]
    due = {"threshold": 1000, "minMessages": 1}
    assert route(state("propose", 1, transcript=long, summarization=due)) == "summarize"  # type: ignore[arg-type]
    done = state("propose", 1, transcript=long, summarization=due, summarized_for="1:critique")
    assert route(done) == "critique"  # type: ignore[arg-type]


def test_the_drawing_has_one_node_per_phase() -> None:
    mermaid = compile_debate().get_graph().draw_mermaid()
    for node in ("setup", "clarify", "summarize", "propose", "critique", "refine", "synthesize"):
        assert re.search(rf"^\s*{node}\(", mermaid, re.M), node
    assert not re.search(r"worker|planner|plan_", mermaid, re.I)
