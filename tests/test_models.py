"""The model factory and its secrets: specs, the default model, the fake model, windows, redaction."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from debate_engine.errors import ProviderError
from debate_engine.providers.factory import (
    ModelConfigError,
    chat_model,
    context_window,
    default_model,
    default_output_tokens,
    loop_token,
    parse_spec,
)
from debate_engine.providers.failures import is_provider_error, provider_error
from debate_engine.providers.secrets import redact


def test_specs_parse_into_provider_name_and_parameters() -> None:
    assert (parse_spec("openai:gpt-4o-mini").provider, parse_spec("openai:gpt-4o-mini").name) == (
        "openai",
        "gpt-4o-mini",
    )
    spec = parse_spec("openrouter:anthropic/claude-3.5-sonnet")
    assert (spec.provider, spec.name) == ("openrouter", "anthropic/claude-3.5-sonnet")
    assert str(spec) == "openrouter:anthropic/claude-3.5-sonnet"
    assert parse_spec("local:smollm2").name == "smollm2"
    assert parse_spec("fake").params == {} and str(parse_spec("fake")) == "fake"
    fake = parse_spec("fake:words=300,latency_ms=500,structured=false,fail=transport")
    assert fake.params == {
        "words": "300",
        "latency_ms": "500",
        "structured": "false",
        "fail": "transport",
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4", "unknown provider 'gpt-4'; use one of openai:<model>"),
        ("anthropic:claude", "unknown provider 'anthropic'"),
        ("openai:", "names no model; write openai:<model name>"),
        ("fake:speed=3", "'speed=3' is not valid; use words=N"),
        ("fake:words", "'words' is not valid"),
        ("local:llama-70b", "the embedded model is local:smollm2"),
    ],
)
def test_bad_specs_say_what_is_valid(spec: str, message: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        parse_spec(spec)
    assert message in str(info.value)


def test_the_default_model_falls_back_through_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEBATE_MODEL", "fake:words=7")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    assert default_model() == "fake:words=7"  # an explicit choice beats any key
    monkeypatch.delenv("DEBATE_MODEL")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    assert default_model() == "openai:gpt-4o-mini"  # both keys: OpenAI first
    monkeypatch.delenv("OPENAI_API_KEY")
    assert default_model() == "openrouter:openai/gpt-4o-mini"
    monkeypatch.delenv("OPENROUTER_API_KEY")
    assert default_model() == "local:smollm2"  # nothing configured: the embedded model, offline
    monkeypatch.setenv("DEBATE_MODEL", "")
    assert default_model() == "local:smollm2"  # an empty variable counts as unset


def test_default_output_tokens_are_smaller_for_the_embedded_model() -> None:
    assert default_output_tokens("local:smollm2") == 192
    assert (
        default_output_tokens("openai:gpt-4o-mini") == 1024
        and default_output_tokens("fake") == 1024
    )


def test_the_fake_model_is_deterministic_and_sized() -> None:
    model = chat_model("fake:words=50")
    a = model.invoke([HumanMessage("Design rate_limiter.py")])
    b = model.invoke([HumanMessage("Design rate_limiter.py")])
    c = model.invoke([HumanMessage("Design a cache")])
    assert a.content == b.content != c.content
    assert len(str(a.content).split()) == 50
    assert a.usage_metadata is not None and a.usage_metadata["output_tokens"] > 0
    assert chat_model("fake:words=50") is model, "a model is built once per setting"


def test_the_fake_model_fails_on_request() -> None:
    with pytest.raises(ConnectionError):
        chat_model("fake:fail=transport").invoke([HumanMessage("hi")])


def test_a_missing_key_is_a_config_error_naming_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY is not set"):
        chat_model("openai:gpt-4o-mini")
    with pytest.raises(ModelConfigError, match="OPENROUTER_API_KEY is not set"):
        chat_model("openrouter:openai/gpt-4o-mini")


def test_an_openai_compatible_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = chat_model("openai:my-local-model", temperature=0.13)
    assert model.model_name == "my-local-model"  # type: ignore[attr-defined]


def test_models_share_one_http_client_per_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    async def clients() -> tuple[object, object, object, object]:
        agent = chat_model("openai:m", temperature=0.7, max_tokens=512)
        judge = chat_model("openai:m", temperature=0.2, max_tokens=1024)
        assert agent is not judge
        return (
            agent.root_async_client._client,
            judge.root_async_client._client,  # type: ignore[attr-defined]
            agent.root_client._client,
            judge.root_client._client,
        )  # type: ignore[attr-defined]

    first = asyncio.run(clients())
    second = asyncio.run(clients())
    assert (
        first[0] is first[1] and first[2] is first[3]
    )  # one pool per loop, one sync pool per process
    assert second[0] is not first[0] and second[2] is first[2]  # a new loop gets its own async pool


def test_a_loop_token_is_never_reused_even_when_a_loop_address_is() -> None:
    import asyncio

    assert loop_token() == 0  # outside any loop
    seen = []
    for _ in range(20):  # closed loops are freed, and their addresses come back
        loop = asyncio.new_event_loop()
        seen.append((id(loop), loop_token(loop), loop_token(loop)))
        loop.close()
        del loop
    assert all(a == b for _, a, b in seen) and len({t for _, t, _ in seen}) == 20
    assert (
        len({i for i, _, _ in seen}) < 20
    )  # the addresses did repeat: the test exercises the reuse


def test_context_windows_come_from_the_configuration_then_the_profile_then_a_default() -> None:
    assert context_window("openai:gpt-4o-mini", 4000) == 4000
    assert context_window("openai:gpt-4o-mini") == 128_000
    assert context_window("fake") == 8192
    assert context_window("local:smollm2") == 3072  # below the server's 4096, for tokenizer drift


def test_keys_never_reach_models_reprs_or_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    model = chat_model("openai:gpt-4o-mini", temperature=0.11)
    assert secret not in repr(model) and secret not in str(model.model_dump())
    wrapped = provider_error(
        "architect", "openai:gpt-4o-mini", RuntimeError(f"401: bad key {secret}")
    )
    assert isinstance(wrapped, ProviderError) and secret not in str(wrapped)
    assert str(wrapped) == "architect on openai:gpt-4o-mini: RuntimeError: 401: bad key [redacted]"


def test_redact_removes_every_api_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-111111")
    monkeypatch.setenv("SOME_VENDOR_API_KEY", "vendor-key-222222")
    monkeypatch.setenv("SHORT_API_KEY", "abc")  # too short to be a secret: common words stay intact
    text = "keys sk-openai-111111 and vendor-key-222222, word abc"
    assert redact(text) == "keys [redacted] and [redacted], word abc"


def test_redact_removes_bearer_tokens_without_an_environment() -> None:
    assert redact("Authorization: Bearer abc.DEF-123_456") == "Authorization: Bearer [redacted]"
    assert redact("header was 'Bearer tok/en+with=chars~'.") == "header was 'Bearer [redacted]'."
    assert redact("no secret here") == "no secret here"


@given(
    key=st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
        min_size=6,
        max_size=60,
    ),
    before=st.text(max_size=30),
    after=st.text(max_size=30),
)
def test_a_configured_key_never_survives_redaction(key: str, before: str, after: str) -> None:
    assume(key not in "[redacted]")  # the marker itself may spell a short key
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANY_PROVIDER_API_KEY", key)
        assert key not in redact(f"{before}{key}{after}")


def test_provider_errors_are_recognised_by_name_or_module() -> None:
    assert is_provider_error(ConnectionError("refused")) and is_provider_error(TimeoutError())
    assert is_provider_error(ProviderError("x"))
    assert not is_provider_error(ValueError("bad value")) and not is_provider_error(KeyError("k"))
