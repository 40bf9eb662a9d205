"""Model calls as LangGraph tasks: one planned call in, one reply out, and the turns made from them.

A task's result is written to the checkpoint as soon as it finishes, so a
resumed phase re-runs only the calls that had not finished. The prompt is the
task's argument and is never stored. The call itself takes the road
(``calls.road``): slots, deadline, fallbacks, parsing and every attempt's usage.
Each call is announced as it finishes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict, TypeVar

from langgraph.config import get_config
from langgraph.func import task
from pydantic import BaseModel

from debate_engine.calls.ledger import Price
from debate_engine.calls.rate_records import RateLimits
from debate_engine.calls.road import Answer, Attempt, CallFailed, Request, aask, ask, most_requests
from debate_engine.calls.schemas import tool_tokens
from debate_engine.calls.spend import FREE, Reserve, bill, worst_case
from debate_engine.config.settings import PERSON_TURN_ROLE, AgentProfile, is_human
from debate_engine.graph.state import ConversationState
from debate_engine.memory import Turn, TurnView, Usage, count_tokens, new_turn
from debate_engine.memory.records import TurnKind
from debate_engine.nodes.human import ask_person
from debate_engine.nodes.positions import POSITION_KINDS, position_of
from debate_engine.nodes.status import emit, spent

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Call:
    """One planned model call: who, for which turn, and the finished prompt."""

    agent: AgentProfile
    kind: TurnKind
    round: int
    target: str | None
    system: str
    user: str
    view: TurnView
    limit: int
    """Most calls at once to this agent's provider (0: no limit)."""
    schema: type[BaseModel] | None = None
    """Ask for this structured output, falling back to plain text."""
    retry_empty: bool = True
    """Retry an empty reply once (off when a spend cap has no room for the retry)."""
    unseen: tuple[int, int] | None = None
    """Turns from ``seq`` [0] up to [1] that neither the summary nor the view holds (summaries failing)."""
    problem: str = ""
    """The debate's problem, which a person's question shows on its own."""
    requests: int = 0
    """Most requests the call may send (0: all the road's policy may take); one when a cap has no more room."""
    token: str = ""
    """The phase run it belongs to: a failed reply names it, so a resumed phase knows a failure as an old one."""
    prices: tuple[tuple[str, Price], ...] = ()
    """The prices of the agent's models: a failed reply carries its dollars, which ``debate list`` shows at once."""
    shown_target: str | None = None
    """The target as the seat is shown it (``Author B`` in an anonymous debate); None: by its id."""
    rate_limits: RateLimits | None = None
    """The rate limits the run's settings state (``settings.rate_limits``), held by the road."""

    @property
    def most_requests(self) -> int:
        """The requests its reserve covers and the road may send."""
        return self.requests or most_requests(self.schema is not None, self.retry_empty)

    def reserve(self) -> list[Reserve]:
        """Return the most this call may spend: input and output tokens at the dearest of its models (a person: none)."""
        if is_human(self.agent):
            return []
        tools = tool_tokens(self.schema) if self.schema else 0  # its definition is billed as prompt
        return [
            (
                (self.agent["model"], *self.agent["fallback_models"]),
                *worst_case(self.view["prompt_tokens"] + tools, self.agent["max_output_tokens"]),
            )
        ] * self.most_requests

    def least(self) -> list[Reserve]:
        """Return the one request the call needs at least (what :meth:`without_retries` leaves it)."""
        return self.reserve()[:1]

    def without_retries(self) -> Call:
        """Return the same call making one request only (when the spend cap has no room for more): an empty reply is not
        asked again, and an unparsed structured one is taken as it is, not asked again in prose."""
        return dataclasses.replace(self, retry_empty=False, requests=1)

    def charge(self, reply: Reply) -> list[tuple[str, str, str, Usage]]:
        """Return what the call spent: every attempt, priced by the model that made it."""
        phase = PHASE_OF.get(self.kind, self.kind)
        attempts = reply.get("attempts")
        if attempts is None:  # a reply checkpointed before attempts were recorded
            usage = reply["usage"] or Usage(
                input_tokens=self.view["prompt_tokens"],
                output_tokens=count_tokens(reply["content"]),
                total_tokens=0,
            )
            return [(self.agent["id"], phase, reply["model"] or self.agent["model"], usage)]
        return [(self.agent["id"], phase, a["model"], a["usage"]) for a in attempts if a["usage"]]


class Reply(TypedDict):
    """What a call returned: stored as the task's result."""

    agent_id: str
    kind: str
    content: str
    parsed: dict[str, Any] | None
    usage: Usage | None
    """What the answer that was kept cost."""
    latency_ms: int
    truncated: bool
    model: str | None
    """The spec of the model that answered (a fallback's, when the primary failed); None for a person."""
    attempts: NotRequired[list[Attempt]]
    """Every request the call made, thrown-away ones included: what is charged."""
    clamped: NotRequired[list[str]]
    """Fields of the structured answer clipped or clamped to fit its schema."""
    position: NotRequired[dict[str, Any] | None]
    """The position a debater's structured reply states (None: it gave none)."""
    failed: NotRequired[str]
    """Why the call failed after every retry and fallback; its ``attempts`` are what it spent."""
    cost: NotRequired[float]
    """A failed call's dollars, each attempt at its model's price (the phase charges them when it completes)."""
    token: NotRequired[str]
    """The phase run that made it (``Call.token``): a failure of an earlier run is asked again on resume."""


PHASE_OF = {
    "clarification": "clarify",
    "proposal": "propose",
    "critique": "critique",
    "refinement": "refine",
    "synthesis": "synthesize",
    "message": "turn",
    "moderation": "moderate",
    "assessment": "assess",
}
"""The node (phase) that makes each kind of turn: what stream metadata names."""


def run_key() -> str:
    """Return the debate run a task belongs to, for its provider slots: the thread (one run per thread at a time)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return ""
    return str(configurable.get("thread_id") or "")


def request_of(call: Call) -> Request:
    """Return the road's request for a planned call."""
    agent, phase = call.agent, PHASE_OF.get(call.kind, call.kind)
    return Request(
        models=(agent["model"], *agent["fallback_models"]),
        system=call.system,
        user=call.user,
        temperature=agent["temperature"],
        max_tokens=agent["max_output_tokens"],
        timeout_s=agent["timeout_s"],
        schema=call.schema,
        retry_empty=call.retry_empty,
        limit=call.limit,
        run=run_key(),
        limits=call.rate_limits,
        who=agent["id"],
        max_requests=call.most_requests,
        tags=(agent["id"], phase),
        metadata={"agent_id": agent["id"], "phase": phase, "kind": call.kind, "round": call.round},
    )


def _reply(call: Call, answer: Answer) -> Reply:
    kept = answer.attempts[-1]
    prose = (answer.parsed or {}).get(
        "reply"
    )  # a debater's structured reply carries its prose as a field
    # the prose is the reply's content: stored once, not again inside the parsed answer (the task's result is
    # checkpointed beside the transcript's turn)
    parsed = (
        {k: v for k, v in answer.parsed.items() if k != "reply"}
        if answer.parsed is not None
        else None
    )
    return Reply(
        agent_id=call.agent["id"],
        kind=call.kind,
        content=str(prose).strip() if prose else answer.text,
        parsed=parsed,
        usage=kept["usage"],
        latency_ms=answer.latency_ms,
        truncated=answer.truncated,
        model=answer.model,
        attempts=answer.attempts,
        clamped=answer.clamped,
        position=position_of(answer.parsed) if call.kind in POSITION_KINDS else None,
    )


def _announce(call: Call, reply: Reply) -> Reply:
    """Announce a reply as soon as it arrives."""
    emit(
        {
            "event": "contribution",
            "kind": call.kind,
            "round": call.round,
            "agent_id": call.agent["id"],
            "target": call.target,
            "tokens": count_tokens(reply["content"]),
            "prompt_tokens": call.view["prompt_tokens"],
            "latency_ms": reply["latency_ms"],
            "truncated": reply["truncated"],
            "model": reply["model"],
            "unseen": list(call.unseen) if call.unseen else None,
            **spent(reply),
        }
    )
    return reply


def person_reply(call: Call) -> Reply:
    """Return a person's turn as a reply: the answer to the seat's question, no model, no usage, nothing to charge."""
    text, position = ask_person(call)
    return Reply(
        agent_id=call.agent["id"],
        kind=call.kind,
        content=text,
        parsed=None,
        usage=None,
        latency_ms=0,
        truncated=False,
        model=None,
        attempts=[],
        position=position if call.kind in POSITION_KINDS else None,
    )


def failed_reply(call: Call, exc: CallFailed) -> Reply:
    """Return a call that failed, as a task result: stored in the checkpoint with what its attempts spent, so that the
    phase charges them once it completes (the phase itself stops the run; resume asks the call again)."""
    return Reply(
        agent_id=call.agent["id"],
        kind=call.kind,
        content="",
        parsed=None,
        usage=None,
        latency_ms=0,
        truncated=False,
        model=None,
        attempts=list(exc.attempts),
        failed=str(exc),
        cost=attempts_cost(exc.attempts, dict(call.prices)),
        token=call.token,
    )


def attempts_cost(attempts: Sequence[Attempt], prices: dict[str, Price]) -> float:
    """Return the dollars of a call's attempts, each at the price of the model that made it."""
    return sum(bill(prices.get(a["model"], FREE), a["usage"])[0] for a in attempts if a["usage"])


def task_named(name: str, func: F) -> F:
    """Return ``func`` renamed ``name``, for ``task``: the twins of a task share the name a checkpoint records.

    ``task(name=...)`` is typed as returning a task of ``Never`` (langgraph#4140); ``task(func)`` is typed.
    """
    func.__name__ = name
    return func


def _model_call(call: Call) -> Reply:
    """Run one call on the road (from a thread, under ``invoke``); a person's seat is asked instead."""
    if is_human(call.agent):
        return _announce(call, person_reply(call))
    try:
        return _announce(call, _reply(call, ask(request_of(call))))
    except CallFailed as exc:
        return failed_reply(call, exc)


async def _amodel_call(call: Call) -> Reply:
    """Return the async twin of :func:`model_call`: cancellable while the request is in flight."""
    if is_human(call.agent):
        return _announce(call, person_reply(call))
    try:
        return _announce(call, _reply(call, await aask(request_of(call))))
    except CallFailed as exc:
        return failed_reply(call, exc)


model_call = task(task_named("model_call", _model_call))
amodel_call = task(task_named("model_call", _amodel_call))


def failed(result: Any) -> bool:
    """Whether a task's result is a call that failed."""
    return isinstance(result, dict) and bool(result.get("failed"))


def after(earlier: Reply, result: Any) -> Any:
    """Return a call asked again after an earlier failure: its reply, carrying the earlier attempts (they were paid)."""
    if not isinstance(result, dict):
        return result
    return {**result, "attempts": [*earlier.get("attempts", []), *result.get("attempts", [])]}


def record_turns(
    state: ConversationState, calls: Sequence[Call], replies: Sequence[Reply]
) -> list[Turn]:
    """Turn replies into transcript turns, numbered after the transcript."""
    start = len(state.get("transcript", []))
    turns = []
    for i, (call, reply) in enumerate(zip(calls, replies, strict=True)):
        if reply["agent_id"] != call.agent["id"] or reply["kind"] != call.kind:
            raise RuntimeError(
                f"task result for {reply['agent_id']}/{reply['kind']} where "
                f"{call.agent['id']}/{call.kind} was planned; the phase's plan is not deterministic"
            )
        turn = new_turn(
            start + i,
            kind=call.kind,
            round_no=call.round,
            speaker=call.agent["id"],
            role=PERSON_TURN_ROLE if is_human(call.agent) else call.agent["role"],
            content=reply["content"],
            target=call.target,
            model=reply["model"],
            usage=reply["usage"],
            latency_ms=reply["latency_ms"],
            view=call.view,
            truncated=reply["truncated"],
            attempts=reply.get("attempts"),
            clamped=reply.get("clamped"),
            position=reply.get("position"),
        )
        turns.append(turn)
    return turns
