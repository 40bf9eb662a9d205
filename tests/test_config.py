"""Config files in the seed schema: they load, and every problem is named with a fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate_engine.graph.config import ConfigError, load_config, resolve
from debate_engine.graph.context import Context

SEED = {
    "agents": [
        {
            "id": "agent-architect",
            "name": "System Architect",
            "role": "architect",
            "model": "gpt-4",
            "provider": "openai",
            "temperature": 0.5,
            "enabled": True,
            "systemPromptPath": None,
            "summaryPromptPath": None,
            "clarificationPromptPath": None,
            "summarization": {"threshold": 8000},
        },
        {"id": "agent-security", "role": "security", "model": "fake", "temperature": 0.4, "enabled": True},
        {"id": "agent-off", "role": "kiss", "model": "fake", "enabled": False},
    ],
    "judge": {"id": "judge-main", "name": "Judge", "role": "generalist", "model": "fake", "temperature": 0.2},
    "debate": {
        "rounds": 4,
        "terminationCondition": {"type": "fixed"},
        "synthesisMethod": "judge",
        "includeFullHistory": True,
        "timeoutPerRound": 300000,
        "interactiveClarifications": False,
        "clarificationsMaxPerAgent": 5,
        "summarization": {"enabled": True, "threshold": 5000, "maxLength": 2500, "method": "length-based"},
    },
}


def write(tmp_path: Path, data) -> str:
    path = tmp_path / "debate.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return str(path)


def problems_of(tmp_path: Path, data) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, data))
    return info.value.problems


def test_a_full_seed_file_loads_and_resolves(tmp_path: Path) -> None:
    plan = resolve(Context(config_file=write(tmp_path, SEED), model="fake"))
    assert [a["id"] for a in plan.agents] == ["agent-architect", "agent-security"]
    assert plan.rounds == 4 and plan.timeout_s == 300
    architect = plan.agents[0]
    assert architect["summarization"]["threshold"] == 8000 and architect["summarization"]["maxLength"] == 2500
    assert plan.agents[1]["summarization"]["threshold"] == 5000
    assert plan.judge["id"] == "judge" and plan.judge["role"] == "judge"


def test_the_seed_provider_maps_onto_a_spec(tmp_path: Path) -> None:
    plan = resolve(Context(config_file=write(tmp_path, {**SEED, "agents": SEED["agents"][1:]})))
    assert plan.agents[0]["model"] == "fake"
    with pytest.raises(ConfigError, match="OPENAI|openai"):
        from debate_engine.providers.factory import chat_model

        try:
            chat_model(resolve(Context(config_file=write(tmp_path, SEED))).agents[0]["model"])
        except Exception as exc:
            raise ConfigError([str(exc)]) from exc


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    bad = {
        "agents": [
            {"id": "a", "role": "wizard", "temperature": 3.5},
            {"id": "a", "role": "security"},
        ],
        "debate": {"rounds": 0},
    }
    problems = problems_of(tmp_path, bad)
    text = "\n".join(problems)
    assert "agents[0].temperature: 3.5 is outside 0-2" in text
    assert "debate.rounds: 0" in text and ">= 1" in text


def test_unknown_role_and_duplicate_ids(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, {"agents": [{"id": "a", "role": "wizard"}, {"id": "a", "role": "security"}]})
    assert any("'wizard' is not a role; use one of architect" in p for p in problems)
    assert any("'a' is used twice" in p for p in problems)


def test_no_enabled_agent(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, {"agents": [{"id": "a", "role": "kiss", "enabled": False}]})
    assert problems == ['agents: no agent is enabled; set "enabled": true on at least one']


def test_bad_json_names_its_line(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, '{\n  "agents": [\n    {"id": "a",}\n  ]\n}')
    assert "line 3" in problems[0]


def test_an_unreadable_prompt_file_warns_and_falls_back(tmp_path: Path, caplog) -> None:
    data = {"agents": [{"id": "a", "role": "kiss", "model": "fake", "systemPromptPath": str(tmp_path / "missing.md")}]}
    load_config(write(tmp_path, data))
    assert "systemPromptPath" in caplog.text and "missing.md" in caplog.text and "built-in" in caplog.text
    from debate_engine.nodes._shared import system_prompt

    profile = resolve(Context(config_file=write(tmp_path, data))).agents[0]
    assert system_prompt(profile).startswith("You are the simplicity advocate")


def test_a_custom_system_prompt_replaces_the_built_in(tmp_path: Path) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text("You are a database expert.")
    data = {"agents": [{"id": "db", "role": "generalist", "model": "fake", "systemPromptPath": str(prompt)}]}
    from debate_engine.nodes._shared import system_prompt

    assert system_prompt(resolve(Context(config_file=write(tmp_path, data))).agents[0]) == "You are a database expert."


def test_context_overrides_and_bad_values() -> None:
    plan = resolve(Context(agents="kiss,testing", rounds=5, model="fake:words=10"))
    assert [a["role"] for a in plan.agents] == ["kiss", "testing"] and plan.rounds == 5
    with pytest.raises(ConfigError) as info:
        resolve(Context(agents="kiss,wizard", rounds=0, model="gpt4"))
    text = "\n".join(info.value.problems)
    assert "'wizard' is not a role" in text and "rounds: 0" in text and "unknown provider" in text


def test_the_default_model_follows_the_environment(monkeypatch) -> None:
    from debate_engine.providers.factory import default_model

    monkeypatch.delenv("DEBATE_MODEL")
    assert default_model() == "local:smollm2"
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    assert default_model().startswith("openrouter:")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert default_model().startswith("openai:")
