"""``debate compare``'s spend caps and what it spends (issue 32).

A run a cap stopped is never scored, both caps cover the whole comparison, ``--budget auto`` matches
what the user pays, and the runs at once follow the models the runs use.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main

MODEL = "fake:solve=0.6,conform=0.5"
POPULATION = ["--model", MODEL, "--rounds", "1"]
DOLLAR_AN_OUTPUT_TOKEN = {"prices": {MODEL: {"input": 0, "output": 1_000_000}}}
"""A dollar per output token, prompts free: at 100 output tokens a call, a debate costs ~$1,100."""


def compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[dict[str, Any], str]:
    """Run a comparison on the test's database; its ``--output`` and its table."""
    out, db = tmp_path / "r.json", str(tmp_path / "c.sqlite")
    code = main(["compare", *argv, *POPULATION, "--db", db, "--output", str(out), "--quiet"])
    assert code == 0
    return json.loads(out.read_text()), capsys.readouterr().out


def config_file(tmp_path: Path, data: dict[str, Any] = DOLLAR_AN_OUTPUT_TOKEN) -> str:
    """Return a config file holding ``data`` (by default: a dollar an output token)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def stored(db: Path) -> dict[str, dict[str, Any]]:
    """Every run the comparison's database holds, scored or not, by thread: its final state."""
    from debate_engine.app.cli.runner import graph_for
    from debate_engine.app.store.database import open_checkpointer, thread_ids

    async def read() -> dict[str, dict[str, Any]]:
        async with open_checkpointer(str(db)) as saver:
            graphs = {key: graph_for(key, saver) for key in ("sample", "debate")}
            found = {}
            for thread in await thread_ids(saver):
                graph = graphs["debate" if thread.split(":")[2].startswith("debate") else "sample"]
                config: Any = {"configurable": {"thread_id": thread}}
                found[thread] = dict((await graph.aget_state(config)).values)
            return found

    return asyncio.run(read())


def spent(values: dict[str, Any]) -> tuple[int, float]:
    total = (values.get("spend") or {}).get("total") or {}
    return total.get("input_tokens", 0) + total.get("output_tokens", 0), total.get("cost", 0.0)


def by_label(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["protocol"]: p for p in found["protocols"]}


def test_a_debate_the_cap_stopped_is_left_out_and_a_larger_cap_finishes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["builtin:arithmetic:3", "--protocols", "debate", "--max-output-tokens", "100"]
    argv += ["--config", config_file(tmp_path)]
    found, table = compare(tmp_path, capsys, *argv, "--max-cost", "1500")
    debate = by_label(found)["debate"]
    # the second debate was cut short and the third never began: neither is scored
    assert debate["runs"] == 1
    assert debate["left_out"] == 2 and found["left_out"] == 2 and found["stopped"] == "--max-cost"
    assert "; 2 left out |" in table and "Stopped: the --max-cost of $1500 ran out" in table
    states = stored(tmp_path / "c.sqlite")
    assert all(states[r["thread"]].get("stopped") is None for r in found["runs"]), "whole only"
    assert [v.get("stopped") for v in states.values()].count("budget") == 1
    assert sum(spent(v)[1] for v in states.values()) <= 1500, "the cut debate's spend counts"
    again, table = compare(tmp_path, capsys, *argv, "--max-cost", "10000")
    debate = by_label(again)["debate"]
    # started again with the larger cap, not resumed with the spent one
    assert (debate["runs"], debate["left_out"], again["stopped"]) == (3, 0, None)
    assert again["runs"][0] == found["runs"][0], "the finished debate was read back"
    assert "Stopped" not in table and "left out" not in table


def test_max_tokens_caps_the_whole_comparison_and_the_stop_line_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["builtin:arithmetic:5", "--protocols", "single,vote,debate", "--max-tokens", "20000"]
    found, table = compare(tmp_path, capsys, *argv)
    used = sum(spent(v)[0] for v in stored(tmp_path / "c.sqlite").values())
    assert 0 < used <= 20000, "every run together, the stopped ones included"
    assert by_label(found)["single"]["runs"] == 5 and found["left_out"] > 0
    assert found["stopped"] == "--max-tokens"
    assert "Stopped: the --max-tokens of 20,000 tokens ran out" in table and "$None" not in table


def test_single_and_vote_keep_back_no_judges_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a single run spends about 210 tokens and reserves about 1,300; a judge's share about 3,400
    argv = ["builtin:arithmetic:5", "--protocols", "single", "--max-tokens", "4500"]
    found, _ = compare(tmp_path, capsys, *argv)
    assert by_label(found)["single"]["runs"] == 5


def test_budget_auto_matches_the_dollars_paid_when_prices_are_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Output priced, prompts free: a debate's long prompts cost nothing, so its tokens overstate
    # its price against single's; matched on tokens, the vote cost about twice the debate.
    argv = ["builtin:arithmetic:6", "--protocols", "single,vote,debate", "--budget", "auto"]
    priced = ["--config", config_file(tmp_path), "--max-output-tokens", "100"]
    found, table = compare(tmp_path, capsys, *argv, *priced)
    figures = by_label(found)
    debate, vote = figures["debate"]["cost_per_task"], figures["vote"]["cost_per_task"]
    assert abs(vote - debate) <= 0.15 * debate, (vote, debate)
    assert "sized by --budget auto to the debate's $" in table
    assert "(dollars as billed, cache discounts included)" in table


def test_budget_auto_matches_tokens_when_the_model_is_free(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["builtin:arithmetic:4", "--protocols", "single,vote,debate"]
    found, table = compare(tmp_path, capsys, *argv)
    label = by_label(found)["vote"]["label"]
    assert f"{label}: sized by --budget auto to the debate's " in table
    assert "(tokens: no prices known)" in table
    assert int(label.split("-")[1]) % 2 == 1, "an odd vote: no voter spent on ties"


LOCAL_JUDGE = {
    "agents": [{"id": "a", "role": "kiss", "model": "fake"}],
    "judge": {"id": "j", "role": "generalist", "model": "local:smollm2"},
}
LOCAL_FALLBACK = {
    "agents": [{"id": "a", "role": "kiss", "model": "fake", "fallbackModels": ["local:smollm2"]}]
}


@pytest.mark.parametrize(
    ("argv", "config", "jobs"),
    [
        (["--model", "fake"], None, 4),
        ([], None, 1),  # no API key: the embedded model by default
        ([], LOCAL_JUDGE, 1),
        ([], LOCAL_FALLBACK, 1),
        (["--model", "local:smollm2", "--jobs", "3"], None, 3),
    ],
)
def test_the_runs_at_once_follow_the_resolved_models(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    config: dict[str, Any] | None,
    jobs: int,
) -> None:
    from debate_engine.app.measure.compare import session

    monkeypatch.delenv("DEBATE_MODEL")
    seen: list[int] = []

    async def nothing(comparison: Any, *_: Any) -> list[dict[str, Any]]:
        seen.append(comparison.jobs)
        return []

    monkeypatch.setattr(session, "run_protocol", nothing)
    if config is not None:
        argv = [*argv, "--config", config_file(tmp_path, config)]
    db = str(tmp_path / "c.sqlite")
    code = main(["compare", "builtin:arithmetic:2", "--protocols", "single", "--db", db, *argv])
    assert code == 0 and seen == [jobs]
