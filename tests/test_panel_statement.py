"""The verdict states its panel: distinct models and providers that answered, and a warning on one model.

Each answer is counted by the model that gave it, as the road recorded it on the turn: a fallback that
answered for a failing primary counts as the fallback. The properties are checked over random panels
(hypothesis); the examples are the cases a user meets: every agent on one model (the default), agents
configured apart that all fell back to one model, a person at the table, the judge beside them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from debate_engine.app.reports.verdict_section import panel_lines, verdict_section
from debate_engine.config.settings import AgentProfile, RunSettings
from debate_engine.memory import Turn, new_turn
from debate_engine.nodes.panel import ONE_MODEL, panel_of
from debate_engine.nodes.verdict import verdict

MODELS = ("openai:gpt-4o-mini", "openai:gpt-4o", "openrouter:meta/llama-3", "fake", "fake:words=9")


def agent(
    ident: str, model: str = "fake", fallbacks: tuple[str, ...] = (), role: str = "kiss"
) -> Any:
    return {
        "id": ident,
        "name": ident,
        "role": role,
        "model": model,
        "fallback_models": list(fallbacks),
        "temperature": 0.5,
        "system_prompt": "",
        "summary_prompt": None,
        "context_window": 8192,
        "max_output_tokens": 256,
        "timeout_s": 30.0,
        "summarization": {},
    }


def settings(*agents: AgentProfile, **extra: Any) -> RunSettings:
    return RunSettings(  # type: ignore[typeddict-item]
        protocol="phases", agents=list(agents), judge=agent("judge", "openai:judge-model"), **extra
    )


def turn(seq: int, speaker: str, model: str | None, kind: str = "proposal") -> Turn:
    answered = new_turn(
        seq, kind=kind, round_no=1, speaker=speaker, role="kiss", content="x", model=model
    )
    if kind == "proposal":
        answered["position"] = {
            "position": "use a queue",
            "answer": "A",
            "reason": "r",
            "confidence": 70,
        }
    return answered


def test_a_fallback_counts_as_the_model_that_answered() -> None:
    panel = panel_of(
        settings(
            agent("a", "openai:gpt-4o-mini", ("openrouter:meta/llama-3",)),
            agent("b", "openai:gpt-4o-mini"),
        ),
        [turn(0, "a", "openrouter:meta/llama-3"), turn(1, "b", "openai:gpt-4o-mini")],
    )
    assert panel["models"] == ["openai:gpt-4o-mini", "openrouter:meta/llama-3"]
    assert panel["providers"] == ["openai", "openrouter"] and not panel["one_model"]
    assert panel["said"] == (
        "2 agents answered on 2 distinct models (openai:gpt-4o-mini, openrouter:meta/llama-3) "
        "from 2 providers (openai, openrouter)"
    )
    assert panel["warning"] is None and panel["partial"] is None


def test_agents_configured_apart_that_all_fell_back_to_one_model_are_one_model() -> None:
    panel = panel_of(
        settings(
            agent("a", "openai:gpt-4o", ("fake",)), agent("b", "openrouter:meta/llama-3", ("fake",))
        ),
        [turn(0, "a", "fake"), turn(1, "b", "fake"), turn(2, "judge", "openai:judge-model")],
    )
    assert panel["models"] == ["fake"] and panel["one_model"]
    assert panel["warning"] == f"every agent is one model (fake): {ONE_MODEL}"
    assert "errors are correlated" in ONE_MODEL and "less independent" in ONE_MODEL


def test_a_person_and_the_judge_are_not_counted_as_models() -> None:
    person = {**agent("human:pat", ""), "role": "human"}
    panel = panel_of(
        settings(agent("a", "fake"), person),
        [turn(0, "a", "fake"), turn(1, "human:pat", None), turn(2, "judge", "openai:judge-model")],
    )
    assert panel["agents"] == 1 and panel["persons"] == 1 and panel["models"] == ["fake"]
    assert not panel["one_model"], "one agent is no vote to be correlated"
    assert panel["said"].endswith("; 1 person beside them")


def test_the_verdict_carries_the_panel_and_the_report_states_it() -> None:
    state: Any = {
        "problem": "Q",
        "settings": settings(agent("a"), agent("b"), agent("c"), synthesis="judge"),
        "transcript": [turn(i, s, "fake") for i, s in enumerate("abc")],
    }
    outcome = verdict(state, None)
    assert outcome["panel"]["one_model"] and outcome["panel"]["answered"] == 3
    lines = panel_lines(outcome["panel"])
    assert lines == [
        "- panel: 3 agents answered on 1 distinct model (fake) from 1 provider (fake)",
        f"- warning: every agent is one model (fake): {ONE_MODEL}",
    ]
    report = "\n".join(verdict_section({"solution": {"verdict": outcome}}))  # type: ignore[typeddict-item]
    assert all(line in report for line in lines)


def test_a_missing_agent_is_named_and_the_panel_is_partial() -> None:
    missing = {
        "agent": "c",
        "role": "kiss",
        "models": ["openai:broken"],
        "error": "c on openai:broken: NotFoundError: no such model",
        "round": 2,
        "phase": "critique",
    }
    state: Any = {
        "problem": "Q",
        "settings": settings(agent("a"), agent("b"), missing=[missing]),
        "transcript": [turn(0, "a", "fake"), turn(1, "b", "fake:words=9"), turn(2, "c", "fake")],
    }
    outcome = verdict(state, None)
    panel = outcome["panel"]
    assert panel["partial"] == "partial: 2 of 3 agents" and panel["missing"] == [missing]
    assert panel["agents"] == 3 and panel["answered"] == 3, "it answered before it went missing"
    assert outcome["agreement"] == ["a", "b"], "its last position is no vote"
    assert outcome["confidence"]["how"].endswith("; partial: 2 of 3 agents")
    assert panel_lines(panel)[-1] == (
        "- missing: c (kiss), from round 2 (critique): openai:broken: NotFoundError: no such model"
    )
    seated_again = settings(agent("a"), agent("b"), agent("c"), missing=[missing])
    assert panel_of(seated_again, [])["partial"] is None, "a fork that seats it again is whole"


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]),
        st.lists(st.sampled_from(MODELS), min_size=0, max_size=4),
        min_size=1,
    )
)
def test_the_panel_counts_what_answered(answers: dict[str, list[str]]) -> None:
    agents = [agent(ident, "openai:configured") for ident in sorted(answers)]
    transcript = [
        turn(i, ident, model)
        for i, (ident, model) in enumerate((a, m) for a, ms in answers.items() for m in ms)
    ]
    panel = panel_of(settings(*agents), transcript)
    answered = {m for ms in answers.values() for m in ms}
    assert panel["models"] == sorted(answered)
    assert panel["providers"] == sorted({m.split(":")[0] for m in answered})
    assert panel["answered"] == sum(bool(ms) for ms in answers.values())
    assert panel["agents"] == len(answers)
    assert panel["one_model"] == (panel["answered"] >= 2 and len(answered) == 1)
    assert (panel["warning"] is not None) == panel["one_model"]
    assert "openai:configured" not in panel["models"], "a configured model that never answered"
