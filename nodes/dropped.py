"""A call that failed after every retry and fallback: the run stops, or the debate goes on without its agent.

``onAgentFailure: stop`` (the default) stops the run in the phase (exit 3); resume asks the call again.
``continue`` goes on without the agent while at least one agent is left: the phase applies the replies it
has (the failed call is charged all the same), and its update moves the agent from ``settings["agents"]``
to ``settings["missing"]``, with its error. The panel lives in the settings because every later phase,
router, the vote and the verdict read it there: all of them see the panel that is left without a rule of
their own, and a resume, which reads the settings from the checkpoint, never asks the agent again. A
failure of the judge (the synthesis, a round's check, the moderator), or one that would leave no agent,
stops the run as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from debate_engine.calls.road import CallFailed
from debate_engine.config.settings import MissingAgent, RunSettings, is_human
from debate_engine.graph.state import ConversationState
from debate_engine.nodes.calls import PHASE_OF, Call, failed
from debate_engine.nodes.panel import partial_mark, partial_status
from debate_engine.nodes.status import emit


def going(state: ConversationState, calls: Sequence[Any], results: Sequence[Any]) -> frozenset[int]:
    """Return the failed calls whose agents the debate goes on without, by index: none unless the run continues
    on an agent's failure and an agent is left once they are gone."""
    settings = state["settings"]
    if settings.get("on_agent_failure", "stop") != "continue":
        return frozenset()
    seated = {a["id"] for a in settings["agents"] if not is_human(a)}
    found = [
        i
        for i, (call, result) in enumerate(zip(calls, results, strict=True))
        if isinstance(call, Call) and call.agent["id"] in seated and failed(result)
    ]
    gone = {calls[i].agent["id"] for i in found}
    return frozenset(found) if seated - gone else frozenset()


def raise_failure(results: Sequence[Any], token: str, spared: frozenset[int]) -> None:
    """Stop the run on a call that failed in this run of the phase (exit 3), unless its agent is dropped; resume asks
    it again."""
    for i, result in enumerate(results):
        if failed(result) and result.get("token") == token and i not in spared:
            raise CallFailed(result["failed"], result.get("attempts", []))


def without(
    state: ConversationState, calls: Sequence[Any], results: Sequence[Any], gone: frozenset[int]
) -> tuple[ConversationState, list[Any], list[Any], dict[str, Any]]:
    """Return the phase's state with the panel that is left, the calls and replies to apply, and the settings to
    write (none when nobody is dropped)."""
    if not gone:
        return state, list(calls), list(results), {}
    settings = state["settings"]
    lost: dict[str, MissingAgent] = {}
    for i in sorted(gone):
        call: Call = calls[i]
        agent = call.agent
        lost.setdefault(
            agent["id"],
            MissingAgent(
                agent=agent["id"],
                role=agent["role"],
                models=[agent["model"], *agent["fallback_models"]],
                error=str(results[i]["failed"]),
                round=call.round,
                phase=PHASE_OF.get(call.kind, call.kind),
            ),
        )
    left = RunSettings(
        **{
            **settings,
            "agents": [a for a in settings["agents"] if a["id"] not in lost],
            "missing": [*settings.get("missing", []), *lost.values()],
        }
    )
    for record in lost.values():
        emit({"event": "agent_dropped", **record, "partial": partial_mark(left)})
    kept = [i for i in range(len(calls)) if i not in gone]
    return (
        cast(ConversationState, {**state, "settings": left}),
        [calls[i] for i in kept],
        [results[i] for i in kept],
        {"settings": left},
    )


def marked(update: dict[str, Any], settings: RunSettings) -> dict[str, Any]:
    """Return the phase's update with its status naming the agents the debate goes on without (``debate list``)."""
    said = partial_status(settings)
    if said and "status" in update:
        update["status"] = {**update["status"], "partial": said}
    return update
