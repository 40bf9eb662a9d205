"""A summary job to hand the summarizer, the budgets it runs in, and a fake model that keeps every prompt."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from debate_engine.memory import SummaryJob, make_budget
from debate_engine.memory.strategies import Plan
from debate_engine.providers.fake import FakeChatModel

BIG = make_budget(8192, 1024)
SMALL = make_budget(
    1024, 256
)  # total 768: system 192, summary 96, recent min(480, 768 - 192 - 96 - 48) = 432
ENTITY = "tenant_51_9epxb"


class RecordingModel(FakeChatModel):
    """The fake model, keeping every prompt it was sent; optionally failing its n-th call."""

    prompts: list[list[str]] = Field(default_factory=list)
    fail_on_call: int = 0

    def _reply(self, messages: list[BaseMessage], *args: Any) -> AIMessage:
        self.prompts.append([str(m.content) for m in messages])
        if self.fail_on_call and len(self.prompts) == self.fail_on_call:
            self.calls += 1
            raise ConnectionError(f"fake failure on call {self.fail_on_call}")
        return super()._reply(messages, *args)


def job(
    plan: Plan,
    *,
    budget=BIG,
    max_length: int = 2500,
    max_output_tokens: int = 1024,
    lengths: list[int] | None = None,
    retries: int = 1,
) -> SummaryJob:
    def instructions(length: int) -> str:
        if lengths is not None:
            lengths.append(length)
        return f"Summarize the architect's history in at most {length} characters."

    return SummaryJob(
        agent_id="architect",
        role="architect",
        round=3,
        reason="test",
        strategy="rolling",
        plan=plan,
        max_length=max_length,
        max_output_tokens=max_output_tokens,
        budget=budget,
        system="You are the architect.",
        instructions=instructions,
        instruction="Summarize the history above.",
        model_spec="fake",
        retries=retries,
    )


def first_plan(turns, through=None) -> Plan:
    return Plan(
        fold=None,
        turns=turns,
        through=through if through is not None else turns[-1]["seq"] + 1,
        depth=0,
        parent_id=None,
    )
