"""What positions and the judge's checks cost: tokens with positions against the same debate without them.

3 agents x 4 rounds on ``fake:words=200``. The baseline is the same debate with
no turn asked for a position (the contribution schema switched off for this
run only), in this process. The fake model counts only the messages, so a
second line estimates what a provider bills on top: the tool schema sent with
every positioned call and the position fields the model writes. Then the
judge's checks: calls per round under ``quality`` (a threshold the fake's 7
never reaches, so every round is checked) and ``convergence``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from langchain_core.utils.function_calling import convert_to_openai_tool

from bench.common import PROBLEM, THREE, table, x
from debate_engine import Context, compile_debate
from debate_engine.memory import count_tokens
from debate_engine.nodes.positions import POSITION_FIELDS, POSITION_KINDS, contribution_schema

ROUNDS = 4
MODEL = "fake:words=200"


def run(folder: Path, rule: dict[str, Any] | None = None, positions: bool = True) -> dict[str, Any]:
    """One debate; ``positions=False`` asks no turn for a position (the baseline, for this run only)."""
    config = folder / "positions.json"
    config.write_text(
        json.dumps(
            {"debate": {"rounds": ROUNDS, **({"terminationCondition": rule} if rule else {})}}
        )
    )
    kinds = POSITION_KINDS if positions else frozenset()
    with mock.patch("debate_engine.nodes.views.POSITION_KINDS", kinds):
        context = Context(model=MODEL, agents=THREE, config_file=str(config), summarize=False)
        values = compile_debate().invoke(
            {"problem": PROBLEM}, {"configurable": {"thread_id": "p"}}, context=context
        )
    return dict(values)


def tokens(values: dict[str, Any]) -> int:
    total = values["spend"]["total"]
    return int(total["input_tokens"] + total["output_tokens"])


def billed_extra(values: dict[str, Any]) -> int:
    """Return what a provider would bill beyond the fake's count: each positioned call's tool schema and fields."""
    extra = 0
    for turn in values["transcript"]:
        if turn.get("position") and turn.get("model"):
            schema = contribution_schema(values["settings"]["agents"][0]["max_output_tokens"])
            extra += count_tokens(json.dumps(convert_to_openai_tool(schema)))
            extra += count_tokens(json.dumps({k: turn["position"].get(k) for k in POSITION_FIELDS}))
    return extra


def bench_positions() -> None:
    print(
        f"3 agents x {ROUNDS} rounds on {MODEL}; ratios against the same debate without positions.\n"
    )
    folder = Path(tempfile.mkdtemp(prefix="bench-positions-"))
    bare, full = run(folder, positions=False), run(folder)
    base, with_positions = tokens(bare), tokens(full)
    estimate = with_positions + billed_extra(full)
    table(
        ["debate", "tokens", "vs without positions"],
        [
            ["without positions", base, x(1.0)],
            ["with positions (the fake's count)", with_positions, x(with_positions / base)],
            ["with positions (+ tool schema and fields, as billed)", estimate, x(estimate / base)],
        ],
    )
    print()
    rows = []
    for rule in ({"type": "quality", "threshold": 10}, {"type": "convergence", "minRound": 1}):
        values = run(folder, rule)
        checks = values["spend"]["by_phase"].get("assess", {}).get("calls", 0)
        rows.append(
            [rule["type"], ROUNDS, checks, f"{checks / ROUNDS:.2f}", values.get("stopped") or "-"]
        )
    table(["stop rule", "rounds", "judge's checks", "per round", "stopped"], rows)
    print(
        "\n(convergence on the fake: its answers are short, so they are compared exactly and the judge is "
        "never asked)"
    )
