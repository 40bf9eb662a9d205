"""Nothing accepted and ignored: every config key and every run-context field changes the settings or is refused.

Each key of the config schema and each field of ``Context``/``RoundtableContext`` has a row here. A new key
without a row fails the first tests; a row whose value leaves the resolved settings as they were fails the
others. (``evaluators`` is read by ``debate eval``, not by the debate: it has a test of its own there.)
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from debate_engine.config.context import Context, RoundtableContext
from debate_engine.config.file import (
    AgentEntry,
    ConfigError,
    DebateFile,
    DebateSection,
    PriceEntry,
    RateLimitEntry,
    RateLimitsSection,
    SpendSection,
    Termination,
)
from debate_engine.config.resolve import resolve
from debate_engine.memory import SummarizationSettings

BASE: dict[str, Any] = {
    "agents": [
        {"id": "a1", "role": "kiss", "model": "fake"},
        {"id": "a2", "role": "security", "model": "fake"},
    ],
    "judge": {"model": "fake"},
    "debate": {"rounds": 2},
}
AGENT = {
    "id": "a9",
    "name": "Nine",
    "role": "testing",
    "model": "fake:words=9",
    "provider": "openrouter",
    "temperature": 1.1,
    "enabled": False,
    "systemPromptPath": "PROMPT",
    "summaryPromptPath": "PROMPT",
    "clarificationPromptPath": "PROMPT",
    "summarization": {"threshold": 777},
    "contextWindow": 4096,
    "maxOutputTokens": 300,
    "fallbackModels": ["fake:words=3"],
}
DEBATE = {
    "rounds": 5,
    "terminationCondition": {"type": "convergence"},
    "synthesisMethod": "voting",
    "includeFullHistory": False,
    "timeoutPerRound": 9000,
    "interactiveClarifications": True,
    "anonymous": True,
    "onAgentFailure": "continue",
    "clarificationsMaxPerAgent": 1,
    "summarization": {"threshold": 999},
    "contextWindow": 4096,
    "maxOutputTokens": 300,
    "maxConcurrency": 2,
}
TERMINATION = {"type": "convergence", "threshold": 7.0, "minRound": 3}
SPEND = {"maxTokens": 10**9, "maxCost": 5.0}
PRICE = {"input": 1.0, "output": 2.0, "cacheRead": 0.5, "cacheWrite": 1.5}
RATE_LIMIT = {"rpm": 60, "tpm": 90_000}
RATE_LIMITS = {
    "periodSeconds": 1,
    "models": {"fake": RATE_LIMIT},
    "providers": {"fake": RATE_LIMIT},
}
SUMMARIZATION = {
    "enabled": False,
    "threshold": 111,
    "maxLength": 999,
    "method": "fresh",
    "promptPath": "PROMPT",
    "tokenLimit": 50,
    "triggerTokenRatio": 0.5,
    "resetTokenRatio": 0.4,
    "everyNTurns": 3,
    "minMessages": 5,
    "cooldownMessages": 7,
    "preserveRecent": 4,
    "maxSummaryChainDepth": 1,
    "abortOnFailure": True,
}
CONTEXT = {
    "model": "fake:words=7",
    "agents": "a1",
    "humans": "pat",
    "rounds": 4,
    "config_file": "CONFIG",
    "clarify": True,
    "max_questions": 1,
    "summarize": False,
    "summary_method": "fresh",
    "summary_threshold": 321,
    "summary_max_length": 700,
    "trigger_ratio": 0.6,
    "context_window": 4096,
    "max_output_tokens": 300,
    "max_concurrency": 3,
    "rpm": 30.0,
    "tpm": 5000.0,
    "timeout_s": 7.0,
    "max_tokens": 10**9,
    "briefings": {"1": "Note."},
    "reply_notes": {"1": "Note."},
    "stop_rule": "convergence",
    "synthesis_method": "merge",
    "max_cost": 9.0,
    "anonymous": True,
    "on_agent_failure": "continue",
    "votes": 3,
    "window": 2,
}
ROUNDTABLE = {
    "turns": 7,
    "order": "moderator",
    "summary_every": 9,
    "view_system": 500,
    "view_summary": 300,
    "view_recent": 900,
}


def keys(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(
    ("model", "rows"),
    [
        (AgentEntry, AGENT),
        (DebateSection, DEBATE),
        (Termination, TERMINATION),
        (SpendSection, SPEND),
        (PriceEntry, PRICE),
        (RateLimitEntry, RATE_LIMIT),
        (RateLimitsSection, RATE_LIMITS),
        (SummarizationSettings, SUMMARIZATION),
    ],
)
def test_every_config_key_has_a_row(model: type[BaseModel], rows: dict[str, Any]) -> None:
    assert keys(model) == set(rows), (
        f"{model.__name__}: add a row for each new key, or drop a removed one"
    )
    assert keys(DebateFile) == {
        "agents",
        "judge",
        "debate",
        "evaluators",
        "budget",
        "prices",
        "rateLimits",
    }


def test_every_context_field_has_a_row() -> None:
    assert {f.name for f in dataclasses.fields(Context)} == set(CONTEXT)
    assert {f.name for f in dataclasses.fields(RoundtableContext)} == set(CONTEXT) | set(ROUNDTABLE)


def settings_of(tmp_path: Path, doc: dict[str, Any], context: Context | None = None) -> Any:
    (tmp_path / "PROMPT").write_text("A prompt of the user's own.")
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(doc).replace('"PROMPT"', json.dumps(str(tmp_path / "PROMPT"))))
    base = context or Context()
    try:
        return resolve(dataclasses.replace(base, config_file=str(path)))
    except ConfigError as exc:
        return f"refused: {exc}"


def changed(
    tmp_path: Path, doc: dict[str, Any], context: Context | None = None, base: Any = None
) -> bool:
    before = settings_of(tmp_path, base or BASE, Context() if context is None else type(context)())
    after = settings_of(tmp_path, doc, context)
    return isinstance(after, str) or json.dumps(after, sort_keys=True, default=str) != json.dumps(
        before, sort_keys=True, default=str
    )


@pytest.mark.parametrize("key", sorted(AGENT))
def test_each_agent_key_changes_the_settings_or_is_refused(tmp_path: Path, key: str) -> None:
    first = (
        {**BASE["agents"][0], "model": "gpt-4o-mini"} if key == "provider" else BASE["agents"][0]
    )
    base = {
        **BASE,
        "agents": [first, BASE["agents"][1], {"id": "a3", "role": "testing", "model": "fake"}],
    }
    doc = {**base, "agents": [{**first, key: AGENT[key]}, *base["agents"][1:]]}
    assert changed(tmp_path, doc, base=base), key


@pytest.mark.parametrize("key", sorted(DEBATE))
def test_each_debate_key_changes_the_settings_or_is_refused(tmp_path: Path, key: str) -> None:
    assert changed(tmp_path, {**BASE, "debate": {**BASE["debate"], key: DEBATE[key]}}), key


@pytest.mark.parametrize(
    ("section", "rows"),
    [("terminationCondition", TERMINATION), ("budget", SPEND), ("summarization", SUMMARIZATION)],
)
def test_each_key_of_a_nested_section_changes_the_settings_or_is_refused(
    tmp_path: Path, section: str, rows: dict[str, Any]
) -> None:
    for key, value in rows.items():
        if section == "budget":
            doc = {**BASE, "budget": {key: value}, "prices": {"fake": PRICE}}
        elif section == "summarization":
            doc = {**BASE, "debate": {**BASE["debate"], "summarization": {key: value}}}
        else:
            doc = {
                **BASE,
                "debate": {**BASE["debate"], section: {"type": "convergence", key: value}},
            }
        assert changed(tmp_path, doc), f"{section}.{key}"


def test_each_rate_limit_key_changes_the_settings(tmp_path: Path) -> None:
    for key, value in RATE_LIMITS.items():
        assert changed(tmp_path, {**BASE, "rateLimits": {key: value}}), f"rateLimits.{key}"
    for key, value in RATE_LIMIT.items():
        for kind in ("models", "providers"):
            doc = {**BASE, "rateLimits": {kind: {"fake": {key: value}}}}
            assert changed(tmp_path, doc), f"rateLimits.{kind}.fake.{key}"


def test_a_price_and_the_judge_change_the_settings(tmp_path: Path) -> None:
    assert changed(tmp_path, {**BASE, "prices": {"fake": PRICE}})
    assert changed(tmp_path, {**BASE, "judge": {"model": "fake:words=4", "temperature": 0.9}})


@pytest.mark.parametrize("field", sorted(set(CONTEXT) - {"config_file"}))
def test_each_context_field_changes_the_settings_or_is_refused(tmp_path: Path, field: str) -> None:
    assert changed(tmp_path, BASE, Context(**{field: CONTEXT[field]})), field


@pytest.mark.parametrize("field", sorted(ROUNDTABLE))
def test_each_roundtable_field_changes_the_settings(tmp_path: Path, field: str) -> None:
    before = settings_of(tmp_path, BASE, RoundtableContext())
    after = settings_of(tmp_path, BASE, RoundtableContext(**{field: ROUNDTABLE[field]}))
    assert isinstance(after, str) or after != before, field
