"""What a model costs: genai-prices (a maintained price list, offline snapshot), or the config's own prices."""

from __future__ import annotations

from typing import Literal

from debate_engine.memory.records import ModelPrice
from debate_engine.providers.factory import parse_spec

FREE_PROVIDERS = ("fake", "local")
"""Providers whose models cost nothing: the offline fake and the embedded model."""
MILLION = 1_000_000


CACHE_RATIOS: dict[str, tuple[float, float]] = {
    "anthropic": (
        0.10,
        1.25,
    ),  # Anthropic bills a cache read at 0.1x the input price and a 5-minute write at 1.25x
    "openai": (
        0.50,
        1.00,
    ),  # OpenAI: cached input at (at most) half the input price; no charge to write
}
"""The cache price ratios providers publish for a family, where the price list has none: (read, write)."""
WHOLE_FAMILY = ("anthropic",)
"""Families whose ratios hold for every model under any endpoint, so they also fill the cache prices a config
leaves out. OpenAI's read ratio is a bound that varies by model, and an ``openai:`` spec may name any compatible
server, which gives no discount: there a config's input price stands for a read."""
CACHE_PRICES: tuple[Literal["cache_read", "cache_write"], ...] = ("cache_read", "cache_write")
"""The prices of a prompt token read from and written to the cache, in the order of the ratios."""


def family(spec: str) -> str | None:
    """Return the model family whose cache rules apply (Anthropic's models through OpenRouter too), or None."""
    parsed = parse_spec(spec)
    name = parsed.name.casefold()
    if parsed.provider == "anthropic" or name.startswith("anthropic/") or "claude" in name:
        return "anthropic"
    if (
        parsed.provider == "openai"
        or name.startswith("openai/")
        or name.startswith(("gpt-", "o1", "o3", "o4"))
    ):
        return "openai"
    return None


def with_cache_ratios(
    spec: str, price: ModelPrice, keys: tuple[str, ...] = ("cache_read", "cache_write")
) -> ModelPrice:
    """Fill the cache prices the list gave only as the input price, by the family's published ratio; say so."""
    ratios = CACHE_RATIOS.get(family(spec) or "")
    if ratios is None:
        return price
    out = ModelPrice(**price)
    estimated: list[str] = []
    for key, ratio in zip(CACHE_PRICES, ratios, strict=True):
        if key in keys and ratio != 1.0 and out.get(key, out["input"]) == out["input"]:
            out[key] = round(out["input"] * ratio, 9)
            estimated.append(key)
    if estimated:
        out["estimated"] = estimated
    return out


def price_of(spec: str, overrides: dict[str, ModelPrice] | None = None) -> ModelPrice | None:
    """Return the price of ``spec``: the config's entry, else genai-prices, else None when nobody knows it."""
    if overrides and spec in overrides:
        # The config's prices stand as stated; a cache price it leaves out is estimated from the family's ratio:
        # a dearer write always (so that a cap counts it at what the provider bills), a read where the ratio
        # holds for the whole family (Anthropic's; else a read at the input price may charge more, never less).
        given = overrides[spec]
        wanted = CACHE_PRICES if family(spec) in WHOLE_FAMILY else ("cache_write",)
        return with_cache_ratios(spec, given, keys=tuple(k for k in wanted if k not in given))
    parsed = parse_spec(spec)
    if parsed.provider in FREE_PROVIDERS:
        return ModelPrice(input=0.0, output=0.0)
    from genai_prices import Usage, calc_price  # start-up: debate list skips the price tables

    def per_million(**tokens: int) -> float:
        return float(
            calc_price(
                Usage(**tokens), model_ref=parsed.name, provider_id=parsed.provider
            ).total_price
        )

    try:
        # genai-prices counts cached tokens inside input_tokens, as the providers report them.
        listed = ModelPrice(
            input=per_million(input_tokens=MILLION),
            output=per_million(output_tokens=MILLION),
            cache_read=per_million(input_tokens=MILLION, cache_read_tokens=MILLION),
            cache_write=per_million(input_tokens=MILLION, cache_write_tokens=MILLION),
        )
        return with_cache_ratios(spec, listed)
    except LookupError:
        return None


def worst_input(price: ModelPrice) -> float:
    """Return the most a prompt token may cost: a cache write can cost more than plain input (Anthropic's 1.25x)."""
    return max(price["input"], price.get("cache_write", price["input"]))


def cost(
    price: ModelPrice,
    input_tokens: int,
    output_tokens: int,
    cache_read: int = 0,
    cache_write: int = 0,
) -> float:
    """Dollars for one call as billed: ``input_tokens`` include the cached ones, which the cache prices pay for."""
    read, write = price.get("cache_read", price["input"]), price.get("cache_write", price["input"])
    uncached = max(0, input_tokens - cache_read - cache_write)
    return (
        uncached * price["input"]
        + cache_read * read
        + cache_write * write
        + output_tokens * price["output"]
    ) / MILLION
