"""Config files in the seed schema: they load, resolve into the settings fixed in state, and every problem is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from debate_engine.config.context import Context
from debate_engine.config.resolve import ConfigError, load_config, resolve
from debate_engine.providers.factory import ModelConfigError, chat_model

SEED: dict[str, Any] = {
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
        {
            "id": "agent-security",
            "role": "security",
            "model": "fake",
            "temperature": 0.4,
            "enabled": True,
        },
        {"id": "agent-off", "role": "kiss", "model": "fake", "enabled": False},
    ],
    "judge": {
        "id": "judge-main",
        "name": "Judge",
        "role": "generalist",
        "model": "fake",
        "temperature": 0.2,
    },
    "debate": {
        "rounds": 4,
        "terminationCondition": {"type": "fixed"},
        "synthesisMethod": "judge",
        "includeFullHistory": True,
        "timeoutPerRound": 300000,
        "interactiveClarifications": False,
        "clarificationsMaxPerAgent": 5,
        "summarization": {
            "enabled": True,
            "threshold": 5000,
            "maxLength": 2500,
            "method": "length-based",
        },
    },
}

TEAM: dict[str, Any] = {
    "agents": [
        {
            "id": "lead",
            "role": "architect",
            "model": "fake:words=11",
            "temperature": 0.9,
            "contextWindow": 4096,
            "maxOutputTokens": 300,
        },
        {"id": "guard", "role": "security", "model": "fake:words=22", "temperature": 0.1},
        {"id": "lean", "role": "kiss", "model": "fake:words=33", "temperature": 1.3},
    ],
    "debate": {"rounds": 2},
}


def write(tmp_path: Path, data: Any, name: str = "debate.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return str(path)


def problems_of(tmp_path: Path, data: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, data))
    return info.value.problems


def resolve_problems(context: Context) -> str:
    with pytest.raises(ConfigError) as info:
        resolve(context)
    return "\n".join(info.value.problems)


def test_a_full_seed_file_loads_and_resolves(tmp_path: Path) -> None:
    settings = resolve(Context(config_file=write(tmp_path, SEED), model="fake"))
    assert [a["id"] for a in settings["agents"]] == ["agent-architect", "agent-security"]
    assert (
        settings["rounds"] == 4 and settings["clarify"] is False and settings["max_questions"] == 5
    )
    architect, security = settings["agents"]
    assert architect["name"] == "System Architect" and security["name"] == "Agent Security"
    assert settings["round_timeout_s"] == 300  # timeoutPerRound is in ms: a round's running time
    assert (
        architect["timeout_s"] == 120 and security["timeout_s"] == 120
    )  # each call keeps its own deadline
    assert (
        architect["summarization"]["threshold"] == 8000
        and architect["summarization"]["maxLength"] == 2500
    )
    assert (
        security["summarization"]["threshold"] == 5000
        and security["summarization"]["method"] == "fresh"
    )
    assert settings["judge"]["id"] == "judge" and settings["judge"]["role"] == "judge"
    assert settings["judge"]["temperature"] == 0.2
    assert all(p["model"] == "fake" for p in (*settings["agents"], settings["judge"]))


def test_the_seed_provider_maps_onto_a_spec(tmp_path: Path) -> None:
    settings = resolve(Context(config_file=write(tmp_path, SEED)))
    assert [a["model"] for a in settings["agents"]] == ["openai:gpt-4", "fake"]
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY is not set"):
        chat_model(settings["agents"][0]["model"])


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    bad = {
        "agents": [
            {"id": "a", "role": "wizard", "temperature": 3.5},
            {"id": "a", "role": "security"},
        ],
        "debate": {"rounds": 0},
    }
    text = "\n".join(problems_of(tmp_path, bad))
    assert "agents[0].temperature: 3.5 is outside 0-2" in text
    assert "debate.rounds: 0 is not a round count; use a whole number from 1 to 10000" in text
    assert (
        "agents[0].role: 'wizard' is not a role" in text
        and "agents[1].id: 'a' is used twice" in text
    )


def test_unknown_role_and_duplicate_ids(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path, {"agents": [{"id": "a", "role": "wizard"}, {"id": "a", "role": "security"}]}
    )
    assert any("'wizard' is not a role; use one of architect" in p for p in problems)
    assert any("'a' is used twice" in p for p in problems)


def test_no_enabled_agent(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, {"agents": [{"id": "a", "role": "kiss", "enabled": False}]})
    assert problems == ['agents: no agent is enabled; set "enabled": true on at least one']


def test_unknown_keys_and_reserved_ids_are_named(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        {"agents": [{"id": "judge", "role": "kiss", "temprature": 0.3}], "debate": {"rouns": 2}},
    )
    text = "\n".join(problems)
    assert "agents[0].temprature: unknown key 'temprature'; did you mean 'temperature'?" in text
    assert "debate.rouns: unknown key 'rouns'; did you mean 'rounds'?" in text
    assert "agents[0].id: 'judge' is reserved" in text


def test_bad_json_names_its_line(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, '{\n  "agents": [\n    {"id": "a",}\n  ]\n}')
    assert len(problems) == 1 and "line 3" in problems[0]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.json: cannot read it"):
        load_config(tmp_path / "missing.json")


def test_an_unreadable_prompt_file_warns_and_falls_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = {
        "agents": [
            {
                "id": "a",
                "role": "kiss",
                "model": "fake",
                "systemPromptPath": str(tmp_path / "missing.md"),
            }
        ]
    }
    load_config(write(tmp_path, data))
    assert (
        "systemPromptPath" in caplog.text
        and "missing.md" in caplog.text
        and "built-in" in caplog.text
    )
    profile = resolve(Context(config_file=write(tmp_path, data)))["agents"][0]
    assert profile["system_prompt"].startswith("You are the simplicity advocate")


def test_a_custom_system_prompt_replaces_the_built_in(tmp_path: Path) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text("You are a database expert.")
    data = {
        "agents": [
            {"id": "db", "role": "generalist", "model": "fake", "systemPromptPath": str(prompt)}
        ]
    }
    profile = resolve(Context(config_file=write(tmp_path, data)))["agents"][0]
    assert profile["system_prompt"] == "You are a database expert."


def test_context_overrides_and_bad_values() -> None:
    settings = resolve(Context(agents="kiss,testing", rounds=5, model="fake:words=10"))
    assert [a["role"] for a in settings["agents"]] == ["kiss", "testing"] and settings[
        "rounds"
    ] == 5
    assert {a["model"] for a in settings["agents"]} == {"fake:words=10"}
    text = resolve_problems(Context(agents="kiss,wizard,kiss", model="gpt4"))
    assert (
        "'wizard' is not a role" in text
        and "unknown provider 'gpt4'" in text
        and "names an agent twice" in text
    )


@pytest.mark.parametrize("wanted", ["lead,lean", "architect,kiss", "lead,kiss", "lean, architect"])
def test_agents_choose_among_the_configured_ones_by_id_or_role(tmp_path: Path, wanted: str) -> None:
    settings = resolve(Context(config_file=write(tmp_path, TEAM), agents=wanted))
    chosen = {a["id"]: (a["role"], a["model"], a["temperature"]) for a in settings["agents"]}
    assert chosen == {
        "lead": ("architect", "fake:words=11", 0.9),
        "lean": ("kiss", "fake:words=33", 1.3),
    }


def test_an_agent_not_in_the_config_is_named(tmp_path: Path) -> None:
    text = resolve_problems(Context(config_file=write(tmp_path, TEAM), agents="lead,testing"))
    assert "'testing' is neither the id nor the role of a configured agent" in text
    assert "architect, guard, kiss, lead, lean, security" in text


def test_per_agent_window_and_output_are_honoured(tmp_path: Path) -> None:
    settings = resolve(Context(config_file=write(tmp_path, TEAM)))
    profiles = {a["id"]: (a["context_window"], a["max_output_tokens"]) for a in settings["agents"]}
    assert profiles == {"lead": (4096, 300), "guard": (8192, 1024), "lean": (8192, 1024)}
    assert (settings["judge"]["context_window"], settings["judge"]["max_output_tokens"]) == (
        8192,
        1024,
    )
    forced = resolve(
        Context(config_file=write(tmp_path, TEAM), context_window=3000, max_output_tokens=500)
    )
    assert {(a["context_window"], a["max_output_tokens"]) for a in forced["agents"]} == {
        (3000, 500)
    }


def test_a_debate_wide_window_applies_where_an_agent_sets_none(tmp_path: Path) -> None:
    data = {**TEAM, "debate": {"rounds": 1, "contextWindow": 16000, "maxOutputTokens": 2000}}
    settings = resolve(Context(config_file=write(tmp_path, data)))
    profiles = {a["id"]: (a["context_window"], a["max_output_tokens"]) for a in settings["agents"]}
    assert profiles == {"lead": (4096, 300), "guard": (16000, 2000), "lean": (16000, 2000)}


@given(rounds=st.integers(10_001, 10**9))
def test_rounds_above_ten_thousand_are_refused_from_the_context(rounds: int) -> None:
    text = resolve_problems(Context(model="fake", rounds=rounds))
    assert text.startswith(f"rounds: {rounds} ") and "from 1 to 10000" in text


def test_rounds_above_ten_thousand_are_refused_from_a_file_with_the_valid_range(
    tmp_path: Path,
) -> None:
    (problem,) = problems_of(tmp_path, {"debate": {"rounds": 20_000}})
    assert problem.startswith("debate.rounds: 20000")
    assert "10000" in problem or "10,000" in problem, (
        f"the message does not say what would be valid: {problem}"
    )


def test_ten_thousand_rounds_are_accepted() -> None:
    assert resolve(Context(model="fake", rounds=10_000))["rounds"] == 10_000


def test_every_problem_of_a_run_is_listed_at_once(tmp_path: Path) -> None:
    # one problem of each kind the resolution checks: a context range, an agent, a budget
    text = resolve_problems(
        Context(
            model="fake", agents="kiss,wizard", rounds=0, context_window=600, max_output_tokens=500
        )
    )
    assert "rounds: 0" in text
    assert "'wizard' is not a role" in text, f"the agent problem was held back: {text}"
    assert "a context window of 600 tokens leaves 100" in text, (
        f"the budget problem was held back: {text}"
    )


def test_a_window_too_small_for_the_output_names_each_agent() -> None:
    text = resolve_problems(
        Context(model="fake", agents="kiss,testing", context_window=1000, max_output_tokens=900)
    )
    assert text.splitlines() == [
        "kiss, testing, judge: a context window of 1000 tokens leaves 100 for the prompt after reserving 900 for "
        "output; the prompt needs at least 256: lower the max output tokens or use a larger window"
    ]


def test_the_default_model_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEBATE_MODEL")
    settings = resolve(Context(agents="kiss", context_window=4096))
    assert settings["agents"][0]["model"] == "local:smollm2" == settings["judge"]["model"]
    assert settings["agents"][0]["max_output_tokens"] == 192


# --- precedence of the clarifying questions' limit: explicit flag > config file > built-in default ---------------


@pytest.mark.parametrize(
    ("given", "in_file", "expected"),
    [
        ({}, {}, 3),  # neither: the built-in default
        ({}, {"clarificationsMaxPerAgent": 1}, 1),  # the file wins over the default
        (
            {"max_questions": 2},
            {"clarificationsMaxPerAgent": 1},
            2,
        ),  # an explicit value wins over the file
        (
            {"max_questions": 3},
            {"clarificationsMaxPerAgent": 1},
            3,
        ),  # even one equal to the default
        ({"max_questions": 0}, {"clarificationsMaxPerAgent": 1}, 0),
    ],
)
def test_max_questions_explicit_then_file_then_default(
    tmp_path: Path, given: dict[str, int], in_file: dict[str, int], expected: int
) -> None:
    config = write(tmp_path, {"debate": {"interactiveClarifications": True, **in_file}})
    for clarify in (
        True,
        False,
    ):  # asked on the command line, or by the file's interactiveClarifications
        settings = resolve(Context(model="fake", config_file=config, clarify=clarify, **given))
        assert settings["clarify"] is True and settings["max_questions"] == expected, (
            clarify,
            given,
            in_file,
        )


def test_clarify_on_the_command_line_keeps_the_files_question_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from debate_engine.app.cli.main import main

    monkeypatch.setattr(
        "sys.stdin.isatty", lambda: False
    )  # no terminal: questions recorded unanswered
    config = write(tmp_path, {"debate": {"clarificationsMaxPerAgent": 1}})
    for flags, expected in (([], 1), (["--max-questions", "3"], 3)):
        out = tmp_path / "q.json"
        assert (
            main(
                [
                    "run",
                    "--model",
                    "fake",
                    "--config",
                    config,
                    "--clarify",
                    *flags,
                    "--agents",
                    "kiss",
                    "--rounds",
                    "1",
                    "--quiet",
                    "--db",
                    str(tmp_path / "d.sqlite"),
                    "--output",
                    str(out),
                    "p",
                ]
            )
            == 0
        )
        state = json.loads(out.read_text())
        assert state["settings"]["max_questions"] == expected, flags
        assert [t["kind"] for t in state["transcript"]].count("clarification") == 1
