"""The runner that turns a phase into a node: plan the calls, check the spend cap, run them as tasks, apply.

A phase plans its calls from state (deterministically: the same state gives
the same calls in the same order), runs them concurrently as LangGraph tasks,
then applies the replies. Each finished task is written to the checkpoint on
its own, so a resumed phase re-runs only the calls that had not finished; the
prompts travel as task arguments and are never stored. Every node has a sync
and an async body, so ``invoke`` and ``ainvoke`` both work.

A round's phase also makes, beside its calls, the summaries the step after it
will want (``summaries.ahead``): planned after its calls from the same input
state, so a resumed phase finds each task where it was, and applied with the
phase's own update.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import wait
from typing import Any, Protocol, Self, cast

from langchain_core.runnables import RunnableLambda
from langgraph.errors import GraphInterrupt

from debate_engine.calls.ledger import empty_spend
from debate_engine.calls.spend import Reserve, charge
from debate_engine.graph.state import ConversationState
from debate_engine.memory.records import Usage
from debate_engine.nodes.calls import Call, after, amodel_call, failed, model_call
from debate_engine.nodes.cap import fits, spend_figures
from debate_engine.nodes.dropped import going, marked, raise_failure, without
from debate_engine.nodes.schedule import next_step
from debate_engine.nodes.status import emit
from debate_engine.nodes.summaries import SummaryCall, ahead, applied, asummary_call, summary_call


class Planned(Protocol):
    """What a phase runs: a model call or a summary; the cap reserves for it (all its requests, or one)
    and charges what its task's result spent."""

    def reserve(self) -> list[Reserve]: ...

    def least(self) -> list[Reserve]:
        """Return the least it can run with: a call's one request, a summary's one request per chunk."""
        ...

    def without_retries(self) -> Self: ...

    def charge(self, result: Any) -> list[tuple[str, str, str, Usage]]: ...


Plan = Callable[[ConversationState], Sequence[Planned]]
Apply = Callable[[ConversationState, Sequence[Any], list[Any]], dict[str, Any]]


SUMMARY_TASKS: tuple[Any, Any] = (summary_call, asummary_call)
"""The tasks that make the summaries beside a round's calls (sync, async)."""

ROUND_PHASES = frozenset({"propose", "critique", "refine", "turn"})
"""The phases whose running time counts against ``timeoutPerRound``."""


def round_clock(name: str, state: ConversationState) -> tuple[int, float, float] | None:
    """For a round's phase under ``timeoutPerRound``: its round, the time the round has run, and its limit."""
    limit = state["settings"].get("round_timeout_s")
    if not limit or name not in ROUND_PHASES:
        return None
    _, round_no = next_step(state)
    clock = state.get("round_clock")
    return (
        round_no,
        float(clock.get("elapsed_s", 0.0)) if clock and clock.get("round") == round_no else 0.0,
        limit,
    )


def _gate(
    name: str, state: ConversationState, calls: Sequence[Planned]
) -> tuple[Sequence[Planned], dict[str, Any] | None]:
    """Return the calls to run, or the update that stops the debate: the cap has no room, or the round's time is up."""
    if not calls:
        return calls, None
    if (
        name == "synthesize"
    ):  # the judge's share was kept back for one request; more only if the cap holds them
        full = [r for c in calls for r in c.reserve()]
        return (
            calls if fits(state, full, keep_judge=False) else [c.without_retries() for c in calls]
        ), None
    clock = round_clock(name, state)
    if clock is not None and clock[1] >= clock[2]:
        emit(
            {
                "event": "round_timeout",
                "phase": name,
                "round": clock[0],
                "elapsed_s": round(clock[1], 3),
                "limit_s": clock[2],
            }
        )
        return calls, {"stopped": "timeout"}
    wanted = [r for c in calls for r in c.least()]  # one request each (a summary: one a chunk)
    if not fits(state, wanted):
        spent = (state.get("spend") or empty_spend())["total"]
        emit(
            {
                "event": "budget_stop",
                "phase": name,
                "round": state.get("round", 0),
                "tokens": spent["input_tokens"] + spent["output_tokens"],
                "cost": spent["cost"],
            }
        )
        return calls, {"stopped": "budget"}
    if not fits(
        state, [r for c in calls for r in c.reserve()]
    ):  # room for the calls, not for asking again
        calls = [c.without_retries() for c in calls]
    return calls, None


def _beside(name: str, state: ConversationState, calls: Sequence[Planned]) -> list[SummaryCall]:
    """Return the summaries to make beside a round's calls, when the spend cap has room for both."""
    if name not in ROUND_PHASES:
        return []
    extra = ahead(state, name, [c for c in calls if isinstance(c, Call)])
    # the calls' worst case as the gate left it (a retry doubles a call), then the summaries' on top
    worst = [r for c in calls for r in c.reserve()]
    once = [r for s in extra for r in s.reserve()]
    if not extra or not fits(state, worst + once):
        return []  # the summarize node weighs what is still due before the next step, against the cap then
    return extra if fits(state, worst + once * 2) else [s.without_retries() for s in extra]


def _planned(
    name: str, state: ConversationState, plan: Plan
) -> tuple[Sequence[Planned], list[SummaryCall], dict[str, Any] | None]:
    """Return the phase's calls, the summaries to make beside them, or the update that stops the debate."""
    calls, stop = _gate(name, state, plan(state))
    return calls, [] if stop is not None else _beside(name, state, calls), stop


def _finish(
    name: str,
    state: ConversationState,
    apply: Apply,
    planned: tuple[Sequence[Planned], list[SummaryCall]],
    results: list[Any],
    started: float,
) -> dict[str, Any]:
    """Apply the phase's replies and the summaries made beside them; charge them all (a dropped agent's failed call
    too: ``nodes.dropped``)."""
    calls, extra = planned
    own = results[: len(calls)]
    left, kept, replies, update = without(state, calls, own, going(state, calls, own))
    update |= apply(left, kept, replies)
    if extra:
        records = results[len(calls) :]
        update |= applied(extra, records)
        if "status" in update:
            update["status"] = {
                **update["status"],
                "summaries": update["status"]["summaries"] + len(records),
            }
    update = marked(update, left["settings"])
    return _timed(name, state, _settle(state, [*calls, *extra], results, update), started)


def _timed(
    name: str, state: ConversationState, update: dict[str, Any], started: float
) -> dict[str, Any]:
    """Add the phase's running time to its round's clock (checked before the round's next phase)."""
    clock = round_clock(name, state)
    if clock is not None:
        update["round_clock"] = {
            "round": clock[0],
            "elapsed_s": clock[1] + time.monotonic() - started,
        }
    return update


def _settle(
    state: ConversationState, calls: Sequence[Planned], results: list[Any], update: dict[str, Any]
) -> dict[str, Any]:
    """Charge what the calls spent, in state and in the status record."""
    charges = [item for c, r in zip(calls, results, strict=True) for item in c.charge(r)]
    spend = charge(
        state.get("spend") or empty_spend(), charges, state["settings"].get("prices", {})
    )
    total = spend["total"]
    update["spend"] = spend
    emit(
        {
            "event": "spend",
            "tokens": total["input_tokens"] + total["output_tokens"],
            "cost": total["cost"],
            "calls": total["calls"],
            "cap": state["settings"].get("cap"),
        }
    )
    if "status" in update:
        update["status"] = {**update["status"], **spend_figures(total)}
    return update


def _tokened(calls: Sequence[Planned], token: str) -> list[Planned]:
    """Return the calls, each naming this run of the phase (a failure it returns then says which run it was)."""
    return [dataclasses.replace(c, token=token) if isinstance(c, Call) else c for c in calls]


def _again(
    name: str, state: ConversationState, calls: Sequence[Planned], results: list[Any], token: str
) -> list[tuple[int, Planned]] | dict[str, Any] | None:
    """Return the calls to ask again: those whose failure an earlier run of the phase left (this is a resume).

    Their failed attempts were paid: the cap must hold them and the new requests. When it holds no request
    more, the debate stops (``budget``) with every paid attempt charged; when it holds one, only one is sent.
    An agent the debate goes on without (``nodes.dropped``) is not asked again. Returns None when there is
    nothing to ask again, the calls with their index, or the update that stops the debate.
    """
    gone = going(state, calls, results)
    stale = [
        i for i, r in enumerate(results) if failed(r) and r.get("token") != token and i not in gone
    ]
    if not stale:
        return None
    paid = charge(
        state.get("spend") or empty_spend(),
        [item for i in stale for item in calls[i].charge(results[i])],
        state["settings"].get("prices", {}),
    )
    seen = cast(ConversationState, {**state, "spend": paid})
    wanted = [calls[i] for i in stale]
    if not fits(seen, [r for c in wanted for r in c.least()]):
        return _stopped(name, state, calls, results)
    full = fits(seen, [r for c in wanted for r in c.reserve()])
    return [(i, calls[i] if full else calls[i].without_retries()) for i in stale]


def _retried(
    name: str,
    state: ConversationState,
    calls: Sequence[Planned],
    results: list[Any],
    token: str,
    run: Any,
) -> list[Any] | dict[str, Any]:
    """Return the results with every failure an earlier run left asked again (in waves, so that a resumed phase finds
    each retry's task where it was); a failure of this run raised; or the update that stops at the cap."""
    while (again := _again(name, state, calls, results, token)) is not None:
        if isinstance(again, dict):
            return again
        futures = {i: run(c) for i, c in again}
        results = [
            after(r, _held(futures[i].result)) if i in futures else r for i, r in enumerate(results)
        ]
    raise_failure(results, token, going(state, calls, results))
    return results


async def _aretried(
    name: str,
    state: ConversationState,
    calls: Sequence[Planned],
    results: list[Any],
    token: str,
    run: Any,
) -> list[Any] | dict[str, Any]:
    """Return the async twin of :func:`_retried`."""
    while (again := _again(name, state, calls, results, token)) is not None:
        if isinstance(again, dict):
            return again
        answers = await asyncio.gather(*(_aheld(run(c)) for _, c in again))
        retried = {i: answer for (i, _), answer in zip(again, answers, strict=True)}
        results = [after(r, retried[i]) if i in retried else r for i, r in enumerate(results)]
    raise_failure(results, token, going(state, calls, results))
    return results


def _stopped(
    name: str, state: ConversationState, calls: Sequence[Planned], results: list[Any]
) -> dict[str, Any]:
    """Stop at the cap inside a phase: nothing is applied, everything its calls paid for is charged."""
    paid = [(c, r) for c, r in zip(calls, results, strict=True) if isinstance(r, dict)]
    update = _settle(state, [c for c, _ in paid], [r for _, r in paid], {"stopped": "budget"})
    total = update["spend"]["total"]
    emit(
        {
            "event": "budget_stop",
            "phase": name,
            "round": state.get("round", 0),
            "tokens": total["input_tokens"] + total["output_tokens"],
            "cost": total["cost"],
        }
    )
    return update


def _held(result: Callable[[], Any]) -> Any:
    """Return a call's result, or the question it asks a person: held until the phase's other calls have finished."""
    try:
        return result()
    except GraphInterrupt as question:
        return question


async def _aheld(call: Awaitable[Any]) -> Any:
    """Return the async twin of :func:`_held` (a failure still ends the phase at once, as it always did)."""
    try:
        return await call
    except GraphInterrupt as question:
        return question


def _settled(results: Sequence[Any]) -> list[Any]:
    """Return the results of the summaries made beside a phase, once all have finished; the first failure, raised.

    When one of the phase's own calls fails, the node waits for these before it fails in turn: a summary the
    provider answered is then kept in the checkpoint (and charged), never asked again on resume.
    """
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        raise failed[0]
    return list(results)


def asked(results: list[Any]) -> list[Any]:
    """Return the results, once no call waits for a person; else pause the run on every question at once.

    The agents' calls of the phase have finished by now and are in the checkpoint: on resume only
    the persons' tasks run again, and they return the answers.
    """
    questions = [q for r in results if isinstance(r, GraphInterrupt) for q in r.args[0]]
    if questions:
        raise GraphInterrupt(tuple(questions))
    return results


def phase_node(
    name: str, plan: Plan, apply: Apply, tasks: tuple[Any, Any] = (model_call, amodel_call)
) -> RunnableLambda[ConversationState, dict[str, Any]]:
    """Return a node that plans its calls, runs them as concurrent tasks and applies the results."""
    sync_task, async_task = tasks

    def run(state: ConversationState) -> dict[str, Any]:
        calls, extra, stop = _planned(name, state, plan)
        if stop is not None:
            return stop
        started, token = time.monotonic(), uuid.uuid4().hex
        calls = _tokened(calls, token)
        own, beside = [sync_task(c) for c in calls], [SUMMARY_TASKS[0](s) for s in extra]
        try:
            results = _retried(name, state, calls, [_held(f.result) for f in own], token, sync_task)
        except Exception:
            wait(beside)  # see _settled: what the provider answered beside the phase is kept
            raise
        if isinstance(
            results, dict
        ):  # the cap holds no second try: stopped, every paid attempt charged
            wait(beside)
            return results
        return _finish(
            name,
            state,
            apply,
            (calls, extra),
            asked(results + [_held(f.result) for f in beside]),
            started,
        )

    async def arun(state: ConversationState) -> dict[str, Any]:
        # Planning reads prompt files and the token table and counts every view: off the event loop.
        calls, extra, stop = await asyncio.to_thread(lambda: _planned(name, state, plan))
        if stop is not None:
            return stop
        started, token = time.monotonic(), uuid.uuid4().hex
        calls = _tokened(calls, token)
        own = asyncio.gather(*(_aheld(async_task(c)) for c in calls))
        beside = asyncio.gather(
            *(_aheld(SUMMARY_TASKS[1](s)) for s in extra), return_exceptions=True
        )
        try:
            results = await _aretried(name, state, calls, list(await own), token, async_task)
        except Exception:
            await beside
            raise
        if isinstance(results, dict):
            await beside
            return results
        return _finish(
            name, state, apply, (calls, extra), asked(results + _settled(await beside)), started
        )

    run.__name__ = arun.__name__ = name
    return RunnableLambda(run, afunc=arun, name=name)
