"""Memory tokens per round: what keeping every fact costs, with the verbose oracle and with the fake model.

The oracle is the memory test's model (``tests.support.oracle``): the loopback server plays every model, its
summaries carry every fact they see and run to most of their output allowance whatever length they are asked,
their facet lists held to the schema's bounds. 3 agents, a 4,096-token window, 300-word turns, 20 facts of
every shape (identifiers, plain words, numbers with their subject, names, dollar amounts) stated in the
replies of round 1 (and 8 over 20 rounds), rolling summaries. The fake model's row is the same debate on
``fake:words=300`` with no facts. Printed: tokens per round (every call, summaries included), summaries per
round, and the judge's share of the facts; ``python -m bench.against REV --only memory_tokens`` shows each
against REV. Nothing asserts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bench.common import PROBLEM, THREE, environment, table
from debate_engine import Context, compile_debate
from debate_engine.app.measure.probe.driver import run_probe
from debate_engine.app.measure.probe.facts import make_facts
from tests.support.openai_server import OpenAIServer
from tests.support.oracle import Oracle

WORDS = 300
VALUES = (
    "node_29_kbvcp", "polar glacier", "1614", "Tobias Brennan", "$55,810",
    "tenant_40_clvdf", "humble lantern", "7499", "Marta Nakamura", "$7,105",
    "lane_27_hddiv", "copper falcon", "4078", "Dmitri Lindqvist", "$72,793",
    "slot_18_oqmnu", "lunar comet", "8424", "Dmitri Haddad", "$33,561",
)  # fmt: skip
"""The facts' values, every shape, fixed here so that an older tree (whose probe plants identifiers only) is
measured on the same facts."""


def facts(plant: list[int]) -> list[Any]:
    return [
        dataclasses.replace(f, value=v)
        for f, v in zip(make_facts(len(VALUES), plant), VALUES, strict=True)
    ]


def oracle(rounds: int, out: int, plant: list[int]) -> tuple[int, int, float]:
    """Tokens, summaries and the judge's share of the facts for one oracle debate."""
    planted = facts(plant)
    context = Context(
        model="openai:test-model",
        rounds=rounds,
        agents=THREE,
        context_window=4096,
        max_output_tokens=out,
        summary_method="rolling",
    )
    with (
        OpenAIServer(words=WORDS) as server,
        environment(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench-oracle-0000"),
    ):
        Oracle(planted, WORDS).install(server)
        result = run_probe(context, planted, "phases", plant="replies", every=25)
    return result["tokens"], result["summaries"], result["judge"]


def fake(rounds: int, out: int) -> tuple[int, int]:
    """Tokens and summaries of the same debate on the fake model."""
    context = Context(
        model=f"fake:words={WORDS}",
        rounds=rounds,
        agents=THREE,
        context_window=4096,
        max_output_tokens=out,
        summary_method="rolling",
    )
    values = compile_debate().invoke(
        {"problem": PROBLEM}, {"configurable": {"thread_id": "memory"}}, context=context
    )
    spend = values["spend"]["total"]
    return spend["input_tokens"] + spend["output_tokens"], len(values["summary_log"])


def bench_memory_tokens(quick: bool = False) -> None:
    cases = [(5, 512, [1]), (5, 1024, [1])] + ([] if quick else [(20, 512, [1, 8])])
    rows = []
    for rounds, out, plant in cases:
        tokens, summaries, judge = oracle(rounds, out, plant)
        rows.append(
            [
                "oracle",
                rounds,
                out,
                f"{tokens // rounds:,}",
                f"{summaries / rounds:.1f}",
                f"{judge:.0%}",
            ]
        )
        tokens, summaries = fake(rounds, out)
        rows.append(["fake", rounds, out, f"{tokens // rounds:,}", f"{summaries / rounds:.1f}", ""])
    table(
        ["model", "rounds", "output tokens", "tokens per round", "summaries per round", "judge"],
        rows,
    )
