"""Calling a model to summarize a perspective, with its failure rules.

A transport error is retried once (250 ms x 2^attempt); invalid output is not
retried. Either way the failure becomes a ``SummaryRecord`` with status
``failed`` and the debate goes on with the previous summary and the newest
turns that fit; nothing in the transcript is touched.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field, field_validator

from memory.budget import Budget, build_view
from memory.facets import FACET_CAPS, empty_facets, merge_facets, render_summary
from memory.records import SummaryFacets, SummaryRecord, Usage
from memory.settings import SummarizationSettings
from memory.strategies import Plan
from memory.tokens import count_tokens

TRANSPORT_ERRORS = {
    "APIConnectionError",
    "APITimeoutError",
    "RateLimitError",
    "InternalServerError",
    "TransportError",
    "TimeoutException",
    "ConnectError",
    "ConnectionError",
    "TimeoutError",
}
Emit = Callable[[dict[str, Any]], None]


class StructuredSummary(BaseModel):
    """A summary of one agent's debate history."""

    narrative: str = Field(description="A few sentences: what was argued, by whom, and where it stands.")
    key_points: list[str] = Field(default_factory=list, description="The main arguments, one per item.")
    decisions: list[str] = Field(default_factory=list, description="What has been agreed or chosen.")
    unresolved: list[str] = Field(default_factory=list, description="Open questions and disagreements.")
    action_items: list[str] = Field(default_factory=list, description="Concrete next steps proposed.")
    participants: list[str] = Field(default_factory=list, description="Agents whose views appear.")
    domain_entities: list[str] = Field(
        default_factory=list,
        description="Identifiers to keep verbatim: file names, APIs, classes, numbers, versions.",
    )

    @field_validator(*FACET_CAPS, mode="after")
    @classmethod
    def _cap(cls, items: list[str], info: Any) -> list[str]:
        return [str(i) for i in items if str(i).strip()][: FACET_CAPS[info.field_name]]


def is_transport_error(exc: BaseException) -> bool:
    """True for network, timeout and rate-limit failures, whatever the client library."""
    return any(c.__name__ in TRANSPORT_ERRORS for c in type(exc).__mro__)


@dataclass(frozen=True)
class ModelInfo:
    """What the record says about the model that summarized."""

    spec: str
    provider: str
    temperature: float | None


@dataclass(frozen=True)
class SummaryRequest:
    """Everything one summary call needs, model aside."""

    agent_id: str
    role: str
    round: int
    reason: str
    strategy: str
    plan: Plan
    settings: SummarizationSettings
    budget: Budget
    system_prompt: str
    instruction: str


def summarize(
    model: BaseChatModel,
    info: ModelInfo,
    request: SummaryRequest,
    emit: Emit = lambda event: None,
    sleep: Callable[[float], None] = time.sleep,
) -> SummaryRecord:
    """Summarize ``request.plan`` with ``model`` and return the record, ok or failed."""
    plan = request.plan
    view = build_view(
        system_prompt=request.system_prompt,
        task=request.instruction,
        summary=plan.fold,
        turns=plan.turns,
        budget=request.budget,
        min_tail=0,
    )
    seen = set(view.record["turn_ids"])
    shown = [t for t in plan.turns if t["id"] in seen]
    chars_before = sum(len(t["content"]) for t in shown) + (len(plan.fold["text"]) if plan.fold else 0)
    tokens_before = sum(t["tokens"] for t in shown) + (plan.fold["tokens_after"] if plan.fold else 0)
    emit(
        {
            "event": "summarization_started",
            "agent_id": request.agent_id,
            "round": request.round,
            "reason": request.reason,
            "turns": len(shown),
            "tokens_before": tokens_before,
        }
    )
    messages = [SystemMessage(view.system), HumanMessage(view.user)]
    started = time.perf_counter()
    error: str | None = None
    narrative, facets, structured, usage = "", empty_facets(), True, None
    for attempt in range(2):
        try:
            narrative, facets, structured, usage = _call(model, messages)
            error = None
            break
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, none is fatal here
            error = f"{type(exc).__name__}: {exc}"[:500]
            if not is_transport_error(exc) or attempt == 1:
                break
            sleep(0.25 * 2**attempt)
    latency_ms = int((time.perf_counter() - started) * 1000)
    merged = merge_facets(plan.fold["facets"] if plan.fold else None, facets)
    text = render_summary(narrative, merged, request.settings.max_length) if error is None else ""
    covered = [*(plan.fold["covered_turn_ids"] if plan.fold else []), *(t["id"] for t in shown)]
    record = SummaryRecord(
        id=f"sum-{request.agent_id}-r{request.round}-{uuid.uuid4().hex[:8]}",
        agent_id=request.agent_id,
        role=request.role,
        round=request.round,
        depth=plan.depth,
        parent_id=plan.parent_id,
        status="ok" if error is None else "failed",
        text=text,
        narrative=narrative,
        facets=merged,
        covered_turn_ids=covered if error is None else [],
        chars_before=chars_before,
        chars_after=len(text),
        tokens_before=tokens_before,
        tokens_after=count_tokens(text),
        strategy=request.strategy,
        reason=request.reason,
        structured=structured,
        error=error,
        latency_ms=latency_ms,
        usage=usage,
        model=info.spec,
        temperature=info.temperature,
        provider=info.provider,
        created_at=time.time(),
    )
    if error is None:
        emit(
            {
                "event": "summarization_completed",
                "agent_id": request.agent_id,
                "round": request.round,
                "summary_id": record["id"],
                "turns": len(shown),
                "tokens_before": tokens_before,
                "tokens_after": record["tokens_after"],
                "usage": usage,
                "latency_ms": latency_ms,
            }
        )
    else:
        emit({"event": "summarization_error", "agent_id": request.agent_id, "round": request.round, "error": error})
    return record


def _call(model: BaseChatModel, messages: list[Any]) -> tuple[str, SummaryFacets, bool, Usage | None]:
    # The summarizer's tokens must stay out of the `messages` stream.
    config: RunnableConfig = {"tags": ["nostream", "summarizer"]}
    try:
        runnable = model.with_structured_output(StructuredSummary, method="function_calling", include_raw=True)
    except NotImplementedError:
        reply = model.invoke(messages, config=config)
        return str(reply.content).strip(), empty_facets(), False, usage_of(reply)
    out = cast(dict[str, Any], runnable.invoke(messages, config=config))
    if out.get("parsing_error") is not None or out.get("parsed") is None:
        raise ValueError(f"invalid summary output: {out.get('parsing_error') or 'nothing parsed'}")
    parsed: StructuredSummary = out["parsed"]
    facets = SummaryFacets(**parsed.model_dump(exclude={"narrative"}))  # type: ignore[typeddict-item]
    return parsed.narrative.strip(), facets, True, usage_of(out.get("raw"))


def usage_of(message: Any) -> Usage | None:
    """The provider's usage on a message, in our record's shape."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    return Usage(
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
        total_tokens=int(meta.get("total_tokens", 0)),
    )
