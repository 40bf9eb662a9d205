"""The one model factory: a spec string in, a LangChain chat model out.

Specs: ``openai:<model>``, ``openrouter:<model>``, ``local:smollm2`` (the
embedded default) and ``fake[:words=N,latency_ms=N,solve=P,conform=C,defer=AGENT:D]``.
Nodes never import a provider SDK; they ask this module.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import itertools
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from debate_engine.errors import InputError
from debate_engine.providers.local_server import BUDGET_WINDOW, ensure_server

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

OPENROUTER_URL = "https://openrouter.ai/api/v1"
SECRET_ENV = ("OPENAI_API_KEY", "OPENROUTER_API_KEY")
DEFAULT_CONTEXT_WINDOW = 8192
PROVIDERS = ("openai", "openrouter", "local", "fake")


_loop_numbers = itertools.count(1)
_LOOP_TOKEN = "_debate_engine_token"
"""The attribute of an event loop that holds its number."""


def loop_token(loop: asyncio.AbstractEventLoop | None = None) -> int:
    """Return a number for ``loop`` (default: the running one, 0 outside any) that no later loop gets.

    ``id(loop)`` is not enough: a loop created after another is closed may reuse its
    address, and would then be handed clients bound to the dead loop.
    """
    if loop is None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return 0
    token: int | None = getattr(loop, _LOOP_TOKEN, None)
    if token is None:
        token = next(_loop_numbers)
        setattr(loop, _LOOP_TOKEN, token)  # on the loop itself, so that it goes with the loop
    return token


class ModelConfigError(InputError, ValueError):
    """A model spec or its environment is wrong; the message says how to fix it."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec."""

    provider: str
    name: str
    params: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}" if self.name else self.provider


def default_model() -> str:
    """Pick a model from the environment: a key means that provider, else the embedded one."""
    if os.environ.get("DEBATE_MODEL"):
        return os.environ["DEBATE_MODEL"]
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4o-mini"
    if os.environ.get("OPENROUTER_API_KEY"):
        return "openrouter:openai/gpt-4o-mini"
    return "local:smollm2"


def parse_spec(spec: str) -> ModelSpec:
    """Parse ``provider:name`` (``fake`` takes ``key=value`` parameters instead of a name)."""
    provider, _, rest = spec.strip().partition(":")
    if provider not in PROVIDERS:
        raise ModelConfigError(
            f"model {spec!r} has unknown provider {provider!r}; use one of "
            "openai:<model>, openrouter:<model>, local:smollm2, fake[:words=N,latency_ms=N]"
        )
    if provider == "fake":
        return ModelSpec("fake", "", _fake_params(rest))
    if not rest:
        raise ModelConfigError(f"model {spec!r} names no model; write {provider}:<model name>")
    if provider == "local" and rest != "smollm2":
        raise ModelConfigError(
            f"local model {rest!r} is not embedded; the embedded model is local:smollm2"
        )
    return ModelSpec(provider, rest)


FAKE_PARAMS = (
    "words",
    "latency_ms",
    "summary_latency_ms",
    "structured",
    "fail",
    "solve",
    "conform",
    "defer",
    "grammar",
)
FAKE_USAGE = (
    "use words=N, latency_ms=N, summary_latency_ms=N, structured=false, grammar=false, "
    "fail=transport|invalid|summaries, "
    "solve=P or conform=C (P and C between 0 and 1; per question, solve=A-B draws P from a range "
    "and solve=A/B/... among values), defer=AGENT:D (take AGENT's answer with probability D)"
)


def _fake_params(rest: str) -> dict[str, str]:
    """Return the fake model's ``key=value`` parameters, each checked: an unknown or bad one is named with the valid ones."""
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in FAKE_PARAMS:
            raise ModelConfigError(f"fake model parameter {item!r} is not valid; {FAKE_USAGE}")
        low = 1 if key == "words" else 0
        if key in ("words", "latency_ms", "summary_latency_ms") and not (
            value.isascii() and value.isdecimal() and low <= int(value) <= 1_000_000
        ):
            raise ModelConfigError(
                f"fake model parameter {item!r}: {key} must be a whole number >= {low}"
            )
        if key in ("structured", "grammar") and value.lower() not in ("true", "false"):
            raise ModelConfigError(f"fake model parameter {item!r}: {key} must be true or false")
        if key == "solve" and not all(map(_probability, solve_values(value))):
            raise ModelConfigError(
                f"fake model parameter {item!r}: solve must be a probability between 0 and 1, a "
                "range A-B of them (A <= B) or values A/B/..."
            )
        if key == "conform" and not _probability(value):
            raise ModelConfigError(
                f"fake model parameter {item!r}: {key} must be a probability between 0 and 1"
            )
        if key == "defer" and not (
            value.rpartition(":")[0] and _probability(value.rpartition(":")[2])
        ):
            raise ModelConfigError(
                f"fake model parameter {item!r}: defer must be AGENT:P, an agent's id and a probability "
                "between 0 and 1 (defer=security:0.8)"
            )
        params[key] = value
    for key in ("conform", "defer"):
        if key in params and "solve" not in params:
            raise ModelConfigError(
                f"fake model parameter {key} needs solve=P too: only the population {key}s"
            )
    return params


def solve_values(value: str) -> list[str]:
    """Return ``solve``'s probabilities: one, a range's two ends (``A-B``, in order) or the values ``A/B/...``."""
    low, dash, high = value.partition("-")
    if dash and not _probability(value):  # 1e-3 is one probability
        ordered = _probability(low) and _probability(high) and float(low) <= float(high)
        return [low, high] if ordered else [""]
    return value.split("/")


def _probability(value: str) -> bool:
    try:
        return 0.0 <= float(value) <= 1.0
    except ValueError:
        return False


def _solve(params: dict[str, str]) -> list[float]:
    """Return the fake's solve probabilities as its spec gives them (none: it is not the population)."""
    return [float(v) for v in solve_values(params["solve"])] if "solve" in params else []


def _defer(value: str) -> tuple[str, float]:
    """Return ``defer=AGENT:P`` as the agent deferred to and the probability of taking its answer."""
    agent, _, probability = value.rpartition(":")
    return agent, float(probability)


def spec_from_config(model: str | None, provider: str | None) -> str | None:
    """Turn the seed config's ``model`` + ``provider`` pair into one spec."""
    if not model:
        return None
    if ":" in model or model == "fake":
        return model
    return f"{provider or 'openai'}:{model}"


def chat_model(
    spec: str,
    *,
    temperature: float = 0.5,
    max_tokens: int = 1024,
    timeout_s: float = 120,
    loop: int | None = None,
) -> BaseChatModel:
    """Return the chat model for ``spec``, built once per distinct setting, endpoint and event loop.

    An async HTTP client belongs to the event loop it first ran in: a model
    built in one ``asyncio.run`` must not be reused by the next. ``loop`` names
    the caller's loop when it builds the model from a worker thread.
    """
    if loop is None:
        loop = loop_token()
    key = str(parse_spec(spec)) if not spec.startswith("fake") else spec
    endpoint = "|".join(os.environ.get(v, "") for v in ("OPENAI_BASE_URL", "OPENROUTER_BASE_URL"))
    credential = hashlib.sha256(
        "|".join(os.environ.get(v, "") for v in SECRET_ENV).encode()
    ).hexdigest()
    return _build(key, temperature, max_tokens, timeout_s, loop, endpoint, credential)


@lru_cache(maxsize=64)
def _build(
    spec: str,
    temperature: float,
    max_tokens: int,
    timeout_s: float,
    loop: int,
    endpoint: str,
    credential: str,
) -> BaseChatModel:
    parsed = parse_spec(spec)
    if parsed.provider == "fake":
        from debate_engine.providers.fake import FakeChatModel  # start-up: the fake loads LangChain

        p = parsed.params
        return FakeChatModel(
            words=int(p.get("words", 60)),
            latency_ms=int(p.get("latency_ms", 0)),
            summary_latency_ms=int(p.get("summary_latency_ms", 0)),
            structured=p.get("structured", "true").lower() != "false",
            fail=p.get("fail"),
            solve=(sum(spread) / len(spread)) if (spread := _solve(p)) else None,
            difficulty=tuple(spread) if len(spread) > 1 else (),
            mixture="/" in p.get("solve", ""),
            conform=float(p.get("conform", 0)),
            defer=_defer(p["defer"]) if "defer" in p else None,
            grammar=p.get("grammar", "true").lower() != "false",
        )
    from langchain_openai import ChatOpenAI  # start-up: openai only for a real model

    common: dict[str, Any] = {
        # Shared connection pools: building a client loads the TLS certificates (about 50 ms each).
        "http_client": _sync_http_client(),
        "http_async_client": _async_http_client(loop),
        "model": parsed.name,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "timeout": timeout_s,
        # Each request is sent once: the road retries (calls/retry.py), so that every request is an attempt,
        # counted and charged, and none is re-sent after the road gave its call up at the deadline.
        "max_retries": 0,
        # The answer's headers in its response_metadata: the road reads the provider's x-ratelimit-* limits there.
        "include_response_headers": True,
        # A streamed answer (Studio's and the viewer's "messages" stream) reports its usage too: without it the
        # provider bills tokens the road can only estimate.
        "stream_usage": True,
    }
    if parsed.provider == "local":
        server = ensure_server()
        # llama.cpp's server ignores `max_completion_tokens`, which ChatOpenAI sends: without
        # `max_tokens` in the body a small model can generate until the window is full.
        limit = common.pop("max_tokens")
        return ChatOpenAI(
            **common, base_url=server.base_url, api_key="embedded", extra_body={"max_tokens": limit}
        )
    if parsed.provider == "openrouter":
        key = _require_key("OPENROUTER_API_KEY", "openrouter")
        return ChatOpenAI(
            **common, base_url=os.environ.get("OPENROUTER_BASE_URL", OPENROUTER_URL), api_key=key
        )
    key = _require_key("OPENAI_API_KEY", "openai", optional=bool(os.environ.get("OPENAI_BASE_URL")))
    return ChatOpenAI(
        **common, api_key=key or "none", base_url=os.environ.get("OPENAI_BASE_URL") or None
    )


@lru_cache(maxsize=1)
def _tls_context() -> Any:
    """Return the TLS context every client shares, made by the HTTP library the openai SDK uses (httpx or httpx2)."""
    from openai import DefaultHttpxClient  # start-up: openai only for a real model

    library = importlib.import_module(DefaultHttpxClient.__mro__[1].__module__.split(".")[0])
    return library.create_ssl_context()


@lru_cache(maxsize=1)
def _sync_http_client() -> Any:
    """One synchronous HTTP client for every model of the process (it is thread-safe)."""
    from openai import DefaultHttpxClient  # start-up: openai only for a real model

    return DefaultHttpxClient(verify=_tls_context())


@lru_cache(maxsize=64)
def _async_http_client(loop: int) -> Any:
    """One asynchronous HTTP client per event loop (a client belongs to the loop it first ran in)."""
    from openai import DefaultAsyncHttpxClient  # start-up: openai only for a real model

    return DefaultAsyncHttpxClient(verify=_tls_context())


def check_credentials(spec: str) -> None:
    """Raise ModelConfigError when ``spec`` needs a key the environment lacks (builds no client)."""
    parsed = parse_spec(spec)
    if parsed.provider == "openrouter":
        _require_key("OPENROUTER_API_KEY", "openrouter")
    elif parsed.provider == "openai":
        _require_key("OPENAI_API_KEY", "openai", optional=bool(os.environ.get("OPENAI_BASE_URL")))


def _require_key(env: str, provider: str, optional: bool = False) -> str | None:
    key = os.environ.get(env)
    if not key and not optional:
        raise ModelConfigError(
            f"{env} is not set; export it to use {provider}: models, or run offline with --model local:smollm2"
        )
    return key


@lru_cache(maxsize=64)
def context_window(spec: str, configured: int | None = None) -> int:
    """Return the window budgets use: configured, else what LangChain knows of the model, else a default."""
    if configured:
        return configured
    parsed = parse_spec(spec)
    if parsed.provider == "local":
        return BUDGET_WINDOW
    if parsed.provider in ("openai", "openrouter"):
        from langchain_openai import ChatOpenAI  # start-up: openai only for a real model

        name = parsed.name.split("/")[-1]
        # The shared HTTP clients: a model's own would load the TLS certificates twice (about 50 ms) for nothing.
        profile = (
            ChatOpenAI(
                model=name,
                api_key="profile-only",
                http_client=_sync_http_client(),
                http_async_client=_async_http_client(0),
            ).profile
            or {}
        )
        if profile.get("max_input_tokens"):
            return int(profile["max_input_tokens"])
    return DEFAULT_CONTEXT_WINDOW


def provider_of(spec: str) -> str:
    """Return the provider part of a spec."""
    return parse_spec(spec).provider


def default_output_tokens(spec: str) -> int:
    """Tokens reserved for each answer when nothing is configured.

    The embedded model writes about 25 tokens/s on two cores and has a small
    window: 192 tokens per answer keeps a 3-agent round within about two minutes.
    """
    return 192 if spec.startswith("local") else 1024
