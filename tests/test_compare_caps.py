"""``debate compare``'s spend caps and what it spends (issue 32).

A run a cap stopped is never scored, both caps cover the whole comparison, ``--budget auto`` matches
what the user pays, and the runs at once follow the models the runs use.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare.gate import Need, Refused, SpendGate
from tests.support.openai_server import OpenAIServer, serving

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
    from debate_engine.app.store.database import open_checkpointer, thread_ids
    from debate_engine.graph.by_protocol import graph_for

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
    # a request of the second debate was refused, and so was the third's: neither is scored
    assert debate["runs"] == 1
    assert debate["left_out"] == 2 and found["left_out"] == 2 and found["stopped"] == "--max-cost"
    assert "; 2 left out |" in table and "Stopped: the --max-cost of $1500 ran out: $" in table
    states = stored(tmp_path / "c.sqlite")
    assert all(states[r["thread"]].get("stopped") is None for r in found["runs"]), "whole only"
    assert sum(bool(v.get("solution")) for v in states.values()) == 1, "the cut ones never finished"
    assert sum(spent(v)[1] for v in states.values()) <= 1500, "the cut debate's spend counts"
    again, table = compare(tmp_path, capsys, *argv, "--max-cost", "10000")
    debate = by_label(again)["debate"]
    # resumed with the larger cap: a run holds no cap of the comparison's
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


# --- each request at the comparison's gate (issue 40) ----------------------------------------------------------

STOP_LINE = re.compile(
    r"Stopped: the --max-(?:tokens|cost) of \$?[\d,.]+(?: tokens)? ran out: \$?([\d,.]+)(?: tokens)? spent, "
    r"and a request that may use up to \$?([\d,.]+) more found \$?([\d,.]+) left; (\d+) run\(s\) it cut"
)
"""The stop line's figures: spent, what the refused request needed, what was left, and the runs cut."""


def stop_figures(table: str) -> tuple[float, float, float, int]:
    found = STOP_LINE.search(table)
    assert found, table
    spent, need, left, cut = found.groups()
    return (
        float(spent.replace(",", "")),
        float(need.replace(",", "")),
        float(left.replace(",", "")),
        int(cut),
    )


def test_a_vote_whose_requests_fit_one_by_one_is_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Single and five debates leave 7,198 of 40,000 tokens: a vote of 15 spends 3,195, though its 15 requests
    may use 1,176 each. Held to that worst case all at once (17,640), no vote was scored."""
    argv = ["builtin:arithmetic:5", "--protocols", "single,vote,debate", "--votes", "15"]
    found, table = compare(tmp_path, capsys, *argv, "--max-tokens", "40000")
    figures = by_label(found)
    assert (figures["single"]["runs"], figures["debate"]["runs"]) == (5, 5)
    assert figures["vote"]["runs"] >= 1 and found["stopped"] == "--max-tokens"
    used, need, left, cut = stop_figures(table)
    assert used + left == 40000 and need > left and cut == figures["vote"]["left_out"]
    assert sum(spent(v)[0] for v in stored(tmp_path / "c.sqlite").values()) <= used


def test_a_cap_below_a_judge_s_share_scores_the_single_runs_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A single run spends about 213 tokens and may use 1,176: 2,000 tokens hold four of five. The cap was
    refused, as if it were one run's that must pay a judge 3,072 tokens."""
    found, table = compare(
        tmp_path, capsys, "builtin:arithmetic:5", "--protocols", "single", "--max-tokens", "2000"
    )
    single = by_label(found)["single"]
    assert (single["runs"], single["left_out"]) == (4, 1)
    used, need, left, cut = stop_figures(table)
    assert used + left == 2000 and need > left and cut == 1


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=40) as srv:
        yield srv


SERVED = "openai:test-model"
"""The loopback server's model: its requests go async, as a real provider's do, and the server counts them."""
A_DOLLAR_A_MILLION = {"prices": {SERVED: {"input": 1.0, "output": 1.0}}}


@pytest.mark.parametrize(
    ("flag", "cap", "tokens"), [("--max-tokens", "9000", 9000), ("--max-cost", "0.009", 9000)]
)
def test_what_the_provider_billed_stays_within_the_cap_and_is_what_the_stop_line_says(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    cap: str,
    tokens: int,
) -> None:
    """At $1 a million tokens, $0.009 is 9,000 tokens: single's four runs (1,548) and one debate (4,916) fit,
    the second debate is cut. Held to its judge's share and each phase's worst case, no debate was scored."""
    argv = ["builtin:arithmetic:4", "--protocols", "single,debate", "--max-output-tokens", "300"]
    argv += ["--config", config_file(tmp_path, A_DOLLAR_A_MILLION), flag, cap]
    out, db = tmp_path / "o.json", str(tmp_path / "c.sqlite")
    code = main(
        ["compare", *argv, "--model", SERVED, "--rounds", "1", "--db", db, "--output", str(out)]
    )
    assert code == 0
    found, table = json.loads(out.read_text()), capsys.readouterr().out
    assert by_label(found)["single"]["runs"] == 4 and by_label(found)["debate"]["runs"] == 1
    billed = server.usage_total()
    assert 0.8 * tokens < billed <= tokens
    used, need, left, _ = stop_figures(table)
    scale = 1 if flag == "--max-tokens" else 1e6
    assert round(used * scale) == billed, "the stop line says what the provider billed"
    assert need > left


def test_a_run_the_cap_cut_resumes_under_a_larger_cap_and_pays_for_nothing_twice(
    server: OpenAIServer, tmp_path: Path
) -> None:
    """Cut at 9,000 tokens and finished at 100,000, the comparison sends the requests one uncapped run sends.
    A run held a cap of its own, stopped at it, and started again: 66 requests and 24,500 tokens for 56 and
    21,212."""
    argv = ["compare", "builtin:arithmetic:4", "--protocols", "single,debate", "--model", SERVED]
    argv += ["--rounds", "1", "--max-output-tokens", "300", "--output", str(tmp_path / "o.json")]

    def sent(db: str, *cap: str) -> tuple[int, int, list[Any]]:
        requests, billed = len(server.requests), server.usage_total()
        assert main([*argv, "--db", str(tmp_path / db), "--quiet", *cap]) == 0
        answers = [r["answer"] for r in json.loads((tmp_path / "o.json").read_text())["runs"]]
        return len(server.requests) - requests, server.usage_total() - billed, answers

    whole = sent("whole.sqlite")
    cut, then = (
        sent("cut.sqlite", "--max-tokens", "9000"),
        sent("cut.sqlite", "--max-tokens", "100000"),
    )
    assert 0 < cut[0] < whole[0] and cut[1] <= 9000
    assert (cut[0] + then[0], cut[1] + then[1], then[2]) == whole


def test_the_gate_lets_requests_through_in_turn_and_refuses_one_only_with_nothing_in_flight() -> (
    None
):
    """100 tokens: a request of 60 goes; the next 60 waits, and a 10 behind it waits its turn; the first
    settles at 20, both go; once they settle at 30 and 5, 45 are left and a request of 50 is refused."""

    async def scenario() -> None:
        spent = {"tokens": 0.0, "cost": 0.0}
        gate = SpendGate({"tokens": 100.0}, spent)
        going = lambda: False  # noqa: E731 - no run is cut here
        await gate.admit(Need(60, 0.0), going)
        second = asyncio.create_task(gate.admit(Need(60, 0.0), going))
        third = asyncio.create_task(gate.admit(Need(10, 0.0), going))
        await asyncio.sleep(0.01)
        assert not second.done() and not third.done(), "the 10 would fit, but waits its turn"
        await gate.settle(Need(60, 0.0), Need(20, 0.0))
        await asyncio.wait_for(asyncio.gather(second, third), 1)
        assert gate.left() == {"tokens": 10.0} and gate.in_flight == 2
        fifty = asyncio.create_task(gate.admit(Need(50, 0.0), going))
        await asyncio.sleep(0.01)
        assert not fifty.done(), (
            "10 are left, but what is in flight may spend less than it reserved"
        )
        await gate.settle(Need(60, 0.0), Need(30, 0.0))
        await gate.settle(Need(10, 0.0), Need(5, 0.0))
        with pytest.raises(Refused) as refused:
            await asyncio.wait_for(fifty, 1)
        assert refused.value.refusal.need == Need(50, 0.0) and spent["tokens"] == 55
        assert (
            gate.refused is refused.value.refusal and refused.value.refusal.flag == "--max-tokens"
        )

    asyncio.run(scenario())
