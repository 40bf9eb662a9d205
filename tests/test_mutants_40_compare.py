"""Tests that kill ``make mutate``'s survivors on issue 40's ``compare`` lines: its figures and its gate.

Each states a behaviour a user relies on that a one-line change to ``app/measure/compare/stats.py`` or
``app/measure/compare/gate.py`` broke with every test still passing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from langchain_core.messages import HumanMessage

from debate_engine import Context
from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.gate import (
    Need,
    Refusal,
    Refused,
    RunGate,
    SpendGate,
    gated_settings,
)
from debate_engine.calls.spend import worst_case
from debate_engine.memory.tokens import count_tokens


def test_a_protocol_the_cap_left_without_a_scored_run_reports_no_accuracy_it_did_not_earn() -> None:
    """``--output`` holds a protocol whose every run a spend cap left out: it scored nothing right."""
    found = results.summarise("escalate", "escalate", [], None, planned=6)
    assert (found["accuracy"], found["interval"], found["left_out"]) == (0.0, [0.0, 0.0], 6)
    assert found["escalated"] == {"share": 0.0, "interval": [0.0, 0.0]}


QUESTION = "What is 6 times 7?"
CHEAP, DEAR = "fake:solve=0.5", "fake:solve=0.6"


def settings() -> Any:
    """Return a run's settings as the gate prices them: three fake agents and the judge, free."""
    return gated_settings(Context(model="fake"), priced=False)


def two_prices(tmp_path: Path) -> Any:
    """Return the settings of a frugal agent (200 output tokens at $1 a million) and a lavish one (2,000
    at $1,000)."""
    doc = {
        "agents": [
            {"id": "frugal", "role": "kiss", "model": CHEAP, "maxOutputTokens": 200},
            {"id": "lavish", "role": "security", "model": DEAR, "maxOutputTokens": 2000},
        ],
        "judge": {"role": "generalist", "model": CHEAP, "maxOutputTokens": 200},
        "prices": {CHEAP: {"input": 1.0, "output": 1.0}, DEAR: {"input": 1000.0, "output": 1000.0}},
    }
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(doc))
    return gated_settings(Context(config_file=str(path)), priced=True)


async def ask(run: RunGate, max_tokens: int | None, agent: str = "architect") -> UUID:
    """Start a request of ``run``'s agent at the gate: a short prompt and ``max_tokens`` to write (None: the
    model does not say, as the fake does not)."""
    run_id = uuid4()
    await run.on_chat_model_start(
        {},
        [[HumanMessage(QUESTION)]],
        run_id=run_id,
        metadata={"agent_id": agent},
        invocation_params={} if max_tokens is None else {"max_tokens": max_tokens},
    )
    return run_id


async def reserved(settings: Any, agent: str, max_tokens: int | None) -> dict[str, float]:
    """Return what one request of ``agent`` reserves at an open gate."""
    gate = SpendGate({"tokens": 1e9, "cost": 1e9}, {"tokens": 0.0, "cost": 0.0})
    await ask(RunGate(gate, settings), max_tokens, agent)
    return gate.reserved


def test_a_request_is_reserved_as_the_debate_s_own_cap_reserves_it() -> None:
    """Its prompt with the margin for the provider's tokenizer, and its whole output allowance."""
    for allowance in (100, 200):
        held = asyncio.run(reserved(settings(), "architect", allowance))
        assert held["tokens"] == sum(worst_case(count_tokens(QUESTION), allowance))


def test_each_request_is_reserved_at_its_own_agent_s_price_and_allowance(tmp_path: Path) -> None:
    """Under ``--max-cost`` a frugal agent's request is not held to the lavish agent's model or length."""
    priced = two_prices(tmp_path)
    frugal, lavish = (asyncio.run(reserved(priced, a, 100)) for a in ("frugal", "lavish"))
    assert frugal["tokens"] == lavish["tokens"] and lavish["cost"] == pytest.approx(
        1000 * frugal["cost"]
    )
    unsaid = {a: asyncio.run(reserved(priced, a, None))["tokens"] for a in ("frugal", "lavish")}
    assert unsaid["lavish"] - unsaid["frugal"] == 2000 - 200


def test_a_vote_s_numbered_voter_is_reserved_as_the_agent_it_copies(tmp_path: Path) -> None:
    priced = two_prices(tmp_path)
    for voter in ("frugal-2", "frugal-15"):
        assert asyncio.run(reserved(priced, voter, None)) == asyncio.run(
            reserved(priced, "frugal", None)
        )


def test_a_refusal_cuts_its_own_run_another_run_whose_request_fits_goes_on() -> None:
    """Runs go on after one is cut (a debate's judge may need more than a single run's request)."""

    async def scenario() -> None:
        gate = SpendGate({"tokens": 2000.0}, {"tokens": 0.0, "cost": 0.0})
        cut, other = RunGate(gate, settings()), RunGate(gate, settings())
        with pytest.raises(Refused):
            await ask(cut, max_tokens=5000)
        await ask(other, max_tokens=100)
        assert gate.in_flight == 1 and not other.cut
        with pytest.raises(Refused):
            await ask(cut, max_tokens=10)  # the cut run asks nothing more, though this would fit

    asyncio.run(scenario())


def test_a_request_that_needs_exactly_what_is_left_goes() -> None:
    async def scenario() -> None:
        going = lambda: False  # noqa: E731 - no run is cut here
        tokens = SpendGate({"tokens": 100.0}, {"tokens": 40.0, "cost": 0.0})
        await asyncio.wait_for(tokens.admit(Need(60, 0.0), going), 1)
        dollars = SpendGate(
            {"cost": 0.3}, {"tokens": 0.0, "cost": 0.1}
        )  # 0.3 - 0.1 < 0.2 in floats
        await asyncio.wait_for(dollars.admit(Need(10, 0.2), going), 1)
        assert tokens.in_flight == dollars.in_flight == 1

    asyncio.run(scenario())


def test_a_failed_request_gives_its_reservation_back_and_counts_its_worst_case() -> None:
    """It may have been billed, so its worst case is spent; but nothing is in flight any more: a request the
    cap cannot hold is refused at once, not left waiting for ever on the failed one."""

    async def scenario() -> None:
        spent = {"tokens": 0.0, "cost": 0.0}
        gate = SpendGate({"tokens": 1500.0}, spent)
        run = RunGate(gate, settings())
        failed = await ask(run, max_tokens=900)
        held = gate.reserved["tokens"]
        await run.on_llm_error(RuntimeError("HTTP 500"), run_id=failed)
        assert (gate.in_flight, gate.reserved["tokens"], spent["tokens"]) == (0, 0.0, held)
        with pytest.raises(Refused):  # 1,500 less the failed one's worst case cannot hold it again
            await asyncio.wait_for(ask(run, max_tokens=900), 1)

    asyncio.run(scenario())


def test_only_a_refusal_is_kept_out_of_langchain_s_callback_log() -> None:
    """Any other error of a callback is still logged: it is what a user reads to find why a run failed.

    The filter the gate puts on LangChain's logger is asked directly: whatever another test did to logging
    (a ``dictConfig`` disabling loggers, ``logging.disable``), it is what decides.
    """
    log = logging.getLogger("langchain_core.callbacks.manager")
    quiet = [f for f in log.filters if type(f).__name__ == "_QuietRefusals"]
    assert quiet, "the gate's filter is not on LangChain's callback logger"
    refusal = Refused(Refusal("--max-tokens", Need(10, 0.0), {"tokens": 95.0}, {"tokens": 100.0}))

    def record(name: str, error: BaseException) -> logging.LogRecord:
        said = (name, "on_llm_end", repr(error))
        return logging.LogRecord(
            log.name, logging.WARNING, __file__, 0, "Error in %s.%s callback: %s", said, None
        )

    records = [record("RunGate", refusal), record("Tracer", KeyError("run"))]
    assert [
        r.args[0] for r in records if all(f.filter(r) for f in quiet) and isinstance(r.args, tuple)
    ] == ["Tracer"]
