"""The probe measures every prompt a debater was sent, as the server received it, in both protocols.

The loopback server records the exact prompt of every request. A plain token search of those prompts for the
planted values must give, prompt by prompt, what the probe measured; the debaters' prompts the server
received must all have been measured; and each row's minimum and mean must be those of its prompts.
"""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest

from debate_engine import Context, RoundtableContext
from debate_engine.app.measure.probe.driver import digest, run_probe
from debate_engine.app.measure.probe.facts import make_facts
from debate_engine.config.resolve import resolve
from debate_engine.prompts import load_prompt
from tests.support.openai_server import OpenAIServer

SUMMARY_TASK = load_prompt("phases/summarize").split("{")[0]
"""How a summary's task begins: its prompt is otherwise its agent's own."""


def debater_prompts(server: OpenAIServer, context: Any) -> dict[str, str]:
    """Return the debaters' prompts the server received, by digest: their own system prompt, not the quiz nor a summary."""
    systems = {a["system_prompt"] for a in resolve(context)["agents"]}
    out = {}
    for request, text in zip(
        [r for r in server.requests if r["path"].endswith("/chat/completions")],
        server.prompts(),
        strict=True,
    ):
        messages = request["body"]["messages"]
        if (
            messages[0]["content"] in systems
            and "Answer each question" not in text
            and SUMMARY_TASK not in text
        ):
            out[digest(text)] = text
    return out


CASES = {
    # a small window and no summaries: the briefing falls out of the later views, so shares vary (with summaries,
    # the identifiers facet keeps every value: see tests/test_memory_oracle.py)
    "phases": Context(
        model="openai:test-model",
        rounds=4,
        agents="architect,security",
        context_window=640,
        max_output_tokens=128,
        summarize=False,
    ),
    "roundtable": RoundtableContext(
        model="openai:test-model",
        turns=24,
        agents="architect,security,kiss",
        summary_every=8,
        context_window=640,
        max_output_tokens=128,
        summarize=False,
    ),
}


@pytest.mark.parametrize("protocol", list(CASES))
def test_each_prompt_as_measured_is_a_token_search_of_what_the_server_received(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = make_facts(6, [1, 2])
    with OpenAIServer(words=40) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe-0000")
        result = run_probe(CASES[protocol], facts, protocol, every=5)
        received = debater_prompts(server, CASES[protocol])
    measured = result["prompts"]
    assert {p["digest"] for p in measured} == set(received), "every debater prompt, and only those"
    for p in measured:
        planted = [f for f in facts if f.round <= p["round"]]
        assert (p["planted"], p["found"]) == (
            len(planted),
            sum(f.value in received[p["digest"]] for f in planted),
        )
    shares = [p["share"] for p in measured]
    assert min(shares) < 1.0 < max(shares) + 1e-9, "some prompts lost facts, some kept them all"
    for row in result["rows"]:
        in_row = [p["share"] for p in measured if row["round"] <= p["round"] <= row["until"]]
        assert (row["prompts"], row["view_min"], row["view_mean"]) == (
            len(in_row),
            round(min(in_row), 3),
            round(mean(in_row), 3),
        )
        assert row["worst"]["share"] == min(in_row) and row["worst"]["digest"] in received
    if protocol == "roundtable":
        assert sum(r["prompts"] for r in result["rows"] if not r["why"]) == len(measured) == 24
