"""Provider failures as one named error that carries no secret and no traceback chain."""

from __future__ import annotations

from debate_engine.providers.secrets import redact

TRANSPORT_ERRORS = {
    "APIConnectionError",
    "APITimeoutError",
    "RateLimitError",
    "InternalServerError",
    "APIStatusError",
    "TransportError",
    "TimeoutException",
    "ConnectError",
    "ConnectionError",
    "TimeoutError",
    "JSONDecodeError",
}


class ProviderError(RuntimeError):
    """A model call failed after the client's retries; the message names the agent, model and cause."""


def is_provider_error(exc: BaseException) -> bool:
    """True for network, timeout, rate-limit and HTTP status failures, whatever the client library."""
    if isinstance(exc, ProviderError):
        return True
    modules = {c.__module__.split(".")[0] for c in type(exc).__mro__}
    return any(c.__name__ in TRANSPORT_ERRORS for c in type(exc).__mro__) or bool(
        modules & {"openai", "httpx", "httpcore"}
    )


def provider_error(agent_id: str, model: str, exc: BaseException) -> ProviderError:
    """Wrap ``exc`` as a ProviderError whose text has every key removed."""
    return ProviderError(redact(f"{agent_id} on {model}: {type(exc).__name__}: {exc}")[:800])
