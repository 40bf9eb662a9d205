"""A person's seat as setup resolves it: no model, no key, no price, no summary; the view an agent would have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.types import Command

from debate_engine import Context, compile_debate
from debate_engine.config.resolve import ConfigError, resolve
from debate_engine.config.settled import settle


def test_human_in_agents_and_named_seats_take_places_beside_the_agents() -> None:
    settings = resolve(Context(model="fake", agents="architect,human", humans="alice,bob"))
    seats = {a["id"]: a for a in settings["agents"]}
    assert list(seats) == ["architect", "human:human", "human:alice", "human:bob"]
    alice, architect = seats["human:alice"], seats["architect"]
    assert (alice["role"], alice["name"], alice["model"], alice["fallback_models"]) == (
        "human",
        "alice",
        "",
        [],
    )
    assert (
        alice["summarization"]["enabled"] is False
    )  # no model to write a summary of the seat's view
    assert (alice["context_window"], alice["max_output_tokens"]) == (
        architect["context_window"],
        architect["max_output_tokens"],
    )
    assert "" not in settings["prices"]
    settle(Context(model="fake", humans="alice"))  # a seat with no model needs no key


def test_a_configured_person_is_chosen_like_an_agent(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": "architect", "role": "architect"},
                    {"id": "carol", "name": "Carol", "role": "human", "maxOutputTokens": 300},
                ]
            }
        )
    )
    chosen = resolve(Context(model="fake", config_file=str(config), agents="architect,human"))[
        "agents"
    ]
    assert [(a["id"], a["name"], a["max_output_tokens"]) for a in chosen][1] == (
        "human:carol",
        "Carol",
        300,
    )
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"agents": [{"id": "architect", "role": "architect"}]}))
    added = resolve(Context(model="fake", config_file=str(plain), agents="architect,human"))[
        "agents"
    ]
    assert [a["id"] for a in added] == ["architect", "human:human"]


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ({"role": "human", "model": "fake"}, "agents[1].model: a human seat has no model"),
        (
            {"role": "human", "fallbackModels": ["fake"]},
            "agents[1].fallbackModels: a human seat has no model",
        ),
        ({"role": "human", "temperature": 0.2}, "agents[1].temperature: a human seat has no model"),
        ({"role": "humans"}, "or human for a person's seat"),
    ],
)
def test_model_settings_on_a_person_are_refused(
    tmp_path: Path, entry: dict[str, object], named: str
) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"agents": [{"role": "architect"}, entry]}))
    with pytest.raises(ConfigError) as raised:
        resolve(Context(model="fake", config_file=str(config)))
    assert any(named in p for p in raised.value.problems), raised.value.problems


def test_clarifying_questions_come_from_the_agents_only() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "q"}}
    graph.invoke(
        {"problem": "p"},
        config,
        context=Context(model="fake", agents="architect", humans="alice", rounds=1, clarify=True),
    )
    (pending,) = graph.get_state(config).interrupts
    assert [q["agent_id"] for q in pending.value["questions"]] == ["architect"]
    graph.invoke(Command(resume={pending.id: "no answer"}), config)
    (turn,) = graph.get_state(config).interrupts
    assert turn.value["seat"] == "human:alice" and turn.value["kind"] == "proposal"
