"""The model factory: specs, the fake model, windows, and secrets that stay secret."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from debate_engine.providers.factory import ModelConfigError, chat_model, context_window, parse_spec, redact


def test_specs_parse_and_bad_ones_say_what_is_valid() -> None:
    assert parse_spec("openai:gpt-4o-mini").name == "gpt-4o-mini"
    assert parse_spec("openrouter:anthropic/claude-3.5-sonnet").provider == "openrouter"
    assert parse_spec("fake:words=300,latency_ms=500").params == {"words": "300", "latency_ms": "500"}
    with pytest.raises(ModelConfigError, match="openai:<model>"):
        parse_spec("gpt-4")
    with pytest.raises(ModelConfigError, match="words=N"):
        parse_spec("fake:speed=3")
    with pytest.raises(ModelConfigError, match="local:smollm2"):
        parse_spec("local:llama-70b")


def test_the_fake_model_is_deterministic_and_sized() -> None:
    model = chat_model("fake:words=50")
    a = model.invoke([HumanMessage("Design rate_limiter.py")])
    b = model.invoke([HumanMessage("Design rate_limiter.py")])
    assert a.content == b.content and len(a.content.split()) == 50
    assert a.usage_metadata["output_tokens"] > 0


def test_a_missing_key_is_a_config_error_naming_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY is not set"):
        chat_model("openai:gpt-4o-mini")
    with pytest.raises(ModelConfigError, match="OPENROUTER_API_KEY"):
        chat_model("openrouter:openai/gpt-4o-mini")


def test_context_windows_come_from_the_profile_then_defaults() -> None:
    assert context_window("openai:gpt-4o-mini") == 128000
    assert context_window("fake") == 8192
    assert context_window("openai:gpt-4o-mini", 4000) == 4000


def test_keys_never_reach_models_reprs_or_errors(monkeypatch) -> None:
    secret = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    model = chat_model("openai:gpt-4o-mini", temperature=0.11)
    assert secret not in repr(model) and secret not in str(model.model_dump())
    assert redact(f"401: bad key {secret}") == "401: bad key [redacted]"
