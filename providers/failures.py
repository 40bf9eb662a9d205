"""Provider failures as one named error that carries no secret and no traceback chain."""

from __future__ import annotations

import json
from functools import lru_cache

from debate_engine.errors import ProviderError
from debate_engine.providers.secrets import redact


def is_provider_error(exc: BaseException) -> bool:
    """Return True for network, timeout, rate-limit and HTTP status failures of the model client."""
    return isinstance(exc, _transport_errors())


@lru_cache(maxsize=1)
def _transport_errors() -> tuple[type[BaseException], ...]:
    """Return the error types a failing provider raises: the OpenAI SDK's, its HTTP library's, and the OS's."""
    found: list[type[BaseException]] = [
        ProviderError,
        ConnectionError,
        TimeoutError,
        json.JSONDecodeError,
    ]
    try:
        import openai  # start-up: naming a user's mistake must not import openai

        found.append(
            openai.OpenAIError
        )  # status errors (429, 5xx, 4xx), connection errors and timeouts
    except ImportError:
        pass
    try:
        import httpx  # start-up: naming a user's mistake must not import httpx

        found += [httpx.TransportError, httpx.HTTPStatusError]
    except ImportError:
        pass
    return tuple(found)


def provider_error(agent_id: str, model: str, exc: BaseException) -> ProviderError:
    """Wrap ``exc`` as a ProviderError whose text has every key removed."""
    return ProviderError(redact(f"{agent_id} on {model}: {type(exc).__name__}: {exc}")[:800])
