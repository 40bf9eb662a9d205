"""What a model costs: genai-prices (a maintained price list, offline snapshot), or the config's own prices."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from debate_engine.providers.factory import parse_spec

FREE_PROVIDERS = ("fake", "local")
"""Providers whose models cost nothing: the offline fake and the embedded model."""
MILLION = 1_000_000


class ModelPrice(TypedDict):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: NotRequired[float]
    """A prompt token read from the provider's cache; absent: the input price (no discount unless known)."""
    cache_write: NotRequired[float]
    """A prompt token written to the provider's cache; absent: the input price."""


def price_of(spec: str, overrides: dict[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``spec``: the config's entry, else genai-prices, else None when nobody knows it."""
    if overrides and spec in overrides:
        return overrides[spec]
    parsed = parse_spec(spec)
    if parsed.provider in FREE_PROVIDERS:
        return ModelPrice(input=0.0, output=0.0)
    from genai_prices import Usage, calc_price

    def per_million(**tokens: int) -> float:
        return float(calc_price(Usage(**tokens), model_ref=parsed.name, provider_id=parsed.provider).total_price)

    try:
        # genai-prices counts cached tokens inside input_tokens, as the providers report them.
        return ModelPrice(input=per_million(input_tokens=MILLION), output=per_million(output_tokens=MILLION),
                          cache_read=per_million(input_tokens=MILLION, cache_read_tokens=MILLION),
                          cache_write=per_million(input_tokens=MILLION, cache_write_tokens=MILLION))
    except LookupError:
        return None


def cost(price: ModelPrice, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> float:
    """Dollars for one call as billed: ``input_tokens`` include the cached ones, which the cache prices pay for."""
    read, write = price.get("cache_read", price["input"]), price.get("cache_write", price["input"])
    uncached = max(0, input_tokens - cache_read - cache_write)
    return (uncached * price["input"] + cache_read * read + cache_write * write
            + output_tokens * price["output"]) / MILLION

