"""Replies that fit their budget and structured answers a grammar-constrained small model can give."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from debate_engine import Context, compile_debate
from debate_engine.app.measure.evaluate import Evaluation
from debate_engine.calls.schemas import schema_problems
from debate_engine.nodes.moderate import next_speaker_schema
from debate_engine.nodes.summarize import summary_schema
from debate_engine.nodes.synthesize import judge_schema
from debate_engine.nodes.views import HEADING_TOKENS, TOKENS_PER_WORD, reply_words
from tests.support.openai_server import OpenAIServer, serving

BUDGETS = (96, 192, 1024, 4096)


def sent(schema: Any) -> dict[str, Any]:
    """Return the JSON schema as the tool definition carries it to the server."""
    return convert_to_openai_tool(schema)["function"]["parameters"]


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_schema_the_engine_sends_has_every_property_required_and_every_array_and_string_bounded(
    budget: int,
) -> None:
    for schema in (
        judge_schema(budget),
        summary_schema(budget),
        next_speaker_schema(("kiss", "security")),
        Evaluation,
    ):
        assert schema_problems(sent(schema)) == [], schema.__name__


def test_the_bounds_scale_with_the_budget() -> None:
    small, large = sent(judge_schema(192)), sent(judge_schema(4096))
    for field in ("description", "confidence_reasons"):
        assert small["properties"][field]["maxLength"] < large["properties"][field]["maxLength"]
    assert (
        small["properties"]["key_decisions"]["maxItems"]
        <= large["properties"]["key_decisions"]["maxItems"]
    )
    assert sent(summary_schema(192))["properties"]["decisions"]["maxItems"] == 1


def test_an_answer_beyond_its_bounds_is_kept_whole_numbers_clamped_and_says_so() -> None:
    schema = judge_schema(192)
    description = "A token bucket per tenant, flag_83_vpbhb. " * 40
    answer = schema.model_validate(
        {
            "description": description,
            "key_decisions": ["a", "b", "c", "d", "e", "f"],
            "trade_offs": [],
            "recommendations": [],
            "open_risks": [],
            "cruxes": [],
            "confidence": 250,
            "confidence_reasons": "x",
        }
    )
    assert answer.confidence == 100  # type: ignore[attr-defined]
    assert answer.key_decisions == ["a", "b", "c", "d", "e", "f"]  # type: ignore[attr-defined]
    assert answer.description == description  # type: ignore[attr-defined]  # paid for: never cut on read
    assert len(description) > sent(schema)["properties"]["description"]["maxLength"]
    assert sorted(answer.clamped) == ["confidence", "description", "key_decisions"]


def test_a_choice_outside_its_choices_is_recorded_and_never_used_as_an_id() -> None:
    from debate_engine.nodes.assess import assessment_schema

    schema = assessment_schema("quality", ("kiss", "security"))
    answer = schema.model_validate({"best": "I think security is best", "score": 7, "reason": "r"})
    assert answer.best == "" and answer.clamped == ["best"]  # type: ignore[attr-defined]
    assert schema.model_validate({"best": "kiss", "score": 7, "reason": "r"}).clamped == []


def test_an_answer_past_its_bounds_is_recorded_on_the_turn_and_kept_whole() -> None:
    def run(model: str) -> dict:
        return compile_debate().invoke(
            {"problem": "Design a cache"},
            {"configurable": {"thread_id": "t"}},
            context=Context(model=model, agents="kiss", rounds=1, max_output_tokens=96),
        )

    synthesis = run("fake:words=80,grammar=false")["transcript"][
        -1
    ]  # no grammar: it writes past the bounds
    assert synthesis["kind"] == "synthesis" and "description" in synthesis["clamped"]
    within = run("fake:words=80")["transcript"][-1]  # as a grammar-constrained model: within them
    assert "clamped" not in within and len(within["content"]) < len(synthesis["content"])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=400) as srv:
        yield srv


def debate(budget: int, streamed: bool = False, **context: Any) -> dict[str, Any]:
    """Run a one-round debate on the loopback server; ``streamed`` streams its calls' tokens, as Studio and the
    viewer's runs do (every request then streams)."""
    graph, config = compile_debate(), {"configurable": {"thread_id": "t"}}
    settings = Context(
        model="openai:test-model",
        agents="kiss,security",
        rounds=1,
        max_output_tokens=budget,
        **context,
    )
    if not streamed:
        return graph.invoke({"problem": "Design a cache"}, config, context=settings)
    for _ in graph.stream(
        {"problem": "Design a cache"}, config, context=settings, stream_mode="messages"
    ):
        pass
    return dict(graph.get_state(config).values)


@pytest.mark.parametrize("budget", (96, 192, 1024))
def test_every_phase_prompt_names_a_length_that_fits_its_budget(
    server: OpenAIServer, budget: int
) -> None:
    debate(budget, summarize=False)
    words = reply_words(budget)
    assert words * TOKENS_PER_WORD + HEADING_TOKENS <= budget
    prompts = server.prompts()
    assert len(prompts) == 7  # 2 proposals, 2 critiques, 2 refinements, the synthesis
    for prompt in prompts:
        stated = re.findall(r"under (\d+) words", prompt)
        assert stated == [str(words)], prompt[-300:]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_cut_structured_reply_is_recorded_as_cut_and_retried_never_stored_as_complete(
    server: OpenAIServer, streamed: bool
) -> None:
    """Streamed, LangChain's merge of the chunks closes the cut call into a valid one: the raw arguments tell."""
    server.cut_tools = True  # a tool call cut at max_tokens, reported as llama.cpp does: finish_reason "tool_calls"
    # the judge's tool call (about 80 words) is cut at 40
    values = debate(40, streamed=streamed, summarize=False)
    if streamed:
        assert all(
            r["body"].get("stream") for r in server.requests if isinstance(r.get("body"), dict)
        )
    judge = values["transcript"][-1]
    cut = [a for a in judge["attempts"] if a["error"] == "cut at the output limit"]
    assert cut and cut[0]["outcome"] == "unparsed"
    assert judge["attempts"][-1]["outcome"] in ("ok", "cut")  # asked again in prose
    assert values["solution"]["structured"] is False  # never stored as a complete structured answer
