"""``timeoutPerRound``: a round's running time, checked before each of its phases; calls keep their own timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from debate_engine import Context, compile_debate


def debate(tmp_path: Path, timeout_ms: int, rounds: int = 3) -> dict[str, Any]:
    path = tmp_path / "debate.json"
    path.write_text(json.dumps({"debate": {"rounds": rounds, "timeoutPerRound": timeout_ms}}))
    graph = compile_debate()
    return graph.invoke(
        {"problem": "Design a cache"},
        {"configurable": {"thread_id": "t"}},
        context=Context(
            config_file=str(path), model="fake:words=8,latency_ms=20", agents="kiss,security"
        ),
    )


def test_a_round_that_used_its_time_stops_the_debate_and_the_judge_synthesizes(
    tmp_path: Path,
) -> None:
    values = debate(tmp_path, timeout_ms=1)  # the proposals alone take 20 ms
    assert values["stopped"] == "timeout"
    assert [t["kind"] for t in values["transcript"]] == ["proposal", "proposal", "synthesis"]
    assert values["settings"]["round_timeout_s"] == 0.001
    assert all(
        a["timeout_s"] == 120.0 for a in values["settings"]["agents"]
    )  # not the round's limit per call


def test_rounds_within_their_time_all_run(tmp_path: Path) -> None:
    values = debate(tmp_path, timeout_ms=600_000, rounds=2)
    assert values.get("stopped") is None
    assert [t["kind"] for t in values["transcript"]].count("refinement") == 4
