"""Run the summarizer's procedure on the real call road, with a model object a test made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

from debate_engine.calls.drive import drive
from debate_engine.memory import SummaryJob, SummaryRecord, summarize
from debate_engine.nodes.summarize import SummaryCall, summary_request


def profile(
    model: str = "fake", fallbacks: tuple[str, ...] = (), max_output_tokens: int = 1024
) -> Any:
    """Return the fields of an agent profile the road reads."""
    return {
        "id": "architect",
        "role": "architect",
        "model": model,
        "fallback_models": list(fallbacks),
        "temperature": 0.2,
        "max_output_tokens": max_output_tokens,
        "timeout_s": 60.0,
    }


def summarize_with(
    model: Any,
    job: SummaryJob,
    emit: Callable[[dict[str, Any]], None] = lambda e: None,
    limit: int = 0,
) -> SummaryRecord:
    """Drive ``summarize(job)`` through the road, every request answered by ``model`` (None: the job's spec)."""
    call = SummaryCall(
        agent=profile(job.model_spec, max_output_tokens=job.max_output_tokens), job=job, limit=limit
    )
    steps = summarize(job, emit=emit)
    if model is None:
        return drive(steps, lambda prompt: summary_request(call, prompt))
    with mock.patch("debate_engine.calls.road.chat_model", lambda *args, **kwargs: model):
        return drive(steps, lambda prompt: summary_request(call, prompt))
