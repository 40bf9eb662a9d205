"""Summarization settings: one validated record, merged field by field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SummarizationSettings(BaseModel):
    """When to summarize a perspective, how, and what to do when it fails."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    enabled: bool = Field(True, description="Summarize at all.")
    threshold: int = Field(
        0,
        ge=0,
        description="Characters of live history that fire a summary (0: off; the seed system used 5000).",
    )
    max_length: int = Field(
        2500, ge=200, alias="maxLength", description="Most characters a summary is asked for."
    )
    method: str = Field("rolling", description="Strategy: 'rolling' or 'fresh'.")
    prompt_path: str | None = Field(
        None, alias="promptPath", description="Custom summary prompt file."
    )
    token_limit: int = Field(
        0,
        ge=0,
        alias="tokenLimit",
        description="Tokens of live history that fire a summary (0: off).",
    )
    trigger_ratio: float = Field(
        0.8,
        gt=0,
        le=2,
        alias="triggerTokenRatio",
        description="Fire at this share of the history budget.",
    )
    reset_ratio: float = Field(
        0.7, gt=0, le=2, alias="resetTokenRatio", description="Hysteresis: re-arm below this share."
    )
    every_n_turns: int = Field(
        0, ge=0, alias="everyNTurns", description="Fire after this many new turns (0: off)."
    )
    min_turns: int = Field(
        2, ge=1, alias="minMessages", description="Never summarize fewer new turns than this."
    )
    cooldown_turns: int = Field(
        4, ge=0, alias="cooldownMessages", description="New turns needed after a summary."
    )
    preserve_recent: int = Field(
        2,
        ge=0,
        alias="preserveRecent",
        description="Newest turns left out of a summary, kept verbatim.",
    )
    max_depth: int = Field(
        3, ge=0, alias="maxSummaryChainDepth", description="Most summaries of summaries in a chain."
    )
    abort_on_failure: bool = Field(
        False, alias="abortOnFailure", description="Stop the debate when summarizing fails."
    )

    @model_validator(mode="before")
    @classmethod
    def _seed_method_names(cls, data: Any) -> Any:
        # The seed system wrote "length-based" for what we call the fresh strategy.
        if isinstance(data, dict) and data.get("method") == "length-based":
            data = {**data, "method": "fresh"}
        return data

    @model_validator(mode="after")
    def _check(self) -> SummarizationSettings:
        if self.method not in ("rolling", "fresh"):
            raise ValueError(f"method {self.method!r} is not a strategy; use 'rolling' or 'fresh'")
        if self.reset_ratio > self.trigger_ratio:
            raise ValueError(
                f"resetTokenRatio {self.reset_ratio} must not exceed triggerTokenRatio {self.trigger_ratio}"
            )
        return self

    def merged(self, overrides: dict[str, Any] | None) -> SummarizationSettings:
        """Return these settings with ``overrides`` (seed or our names) laid over them."""
        if not overrides:
            return self
        base = self.model_dump(by_alias=True)
        return SummarizationSettings.model_validate({**base, **overrides})


def resolved(fields: Mapping[str, Any]) -> SummarizationSettings:
    """Read settings resolved and checked where the run started (a profile's ``summarization``), unchecked."""
    return SummarizationSettings.model_construct(**fields)
