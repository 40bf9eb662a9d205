"""What a model costs: genai-prices (a maintained price list, offline snapshot), or the config's own prices."""

from __future__ import annotations

from typing import TypedDict

from debate_engine.providers.factory import parse_spec

FREE_PROVIDERS = ("fake", "local")
"""Providers whose models cost nothing: the offline fake and the embedded model."""


class ModelPrice(TypedDict):
    """US dollars per million tokens."""

    input: float
    output: float


def price_of(spec: str, overrides: dict[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``spec``: the config's entry, else genai-prices, else None when nobody knows it."""
    if overrides and spec in overrides:
        return overrides[spec]
    parsed = parse_spec(spec)
    if parsed.provider in FREE_PROVIDERS:
        return ModelPrice(input=0.0, output=0.0)
    from genai_prices import Usage, calc_price

    million = 1_000_000
    try:
        found = calc_price(Usage(input_tokens=million, output_tokens=0), model_ref=parsed.name,
                           provider_id=parsed.provider)
        out = calc_price(Usage(input_tokens=0, output_tokens=million), model_ref=parsed.name,
                         provider_id=parsed.provider)
    except LookupError:
        return None
    return ModelPrice(input=float(found.total_price), output=float(out.total_price))


def cost(price: ModelPrice, input_tokens: int, output_tokens: int) -> float:
    """Dollars for one call."""
    return (input_tokens * price["input"] + output_tokens * price["output"]) / 1_000_000
