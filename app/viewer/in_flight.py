"""The step a debate is running: the turns its finished calls have written so far, and who is still at work.

A phase runs its calls as tasks, and each finished task's reply is written to
the checkpoint at once (a pending write); the phase's turns join the transcript
only when its last call ends. A page that showed the transcript alone would
hold a fast agent's proposal until the slowest agent of its phase answered. So
the debate page reads the newest checkpoint's pending writes: every reply that
has landed is shown as it lands, and the step's agents without a reply yet are
the ones at work. The writes are the checkpointer's, whichever process runs
the debate (this server, a terminal, a worker). The step began when its
checkpoint was written (or, for a run this server resumed, when that run
began); a stopped debate shows the replies its next run keeps.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response

from debate_engine.app.reports.figures import duration
from debate_engine.config.settings import is_human
from debate_engine.graph.by_protocol import graph_for, protocol_of
from debate_engine.graph.state import ConversationState
from debate_engine.memory import count_tokens
from debate_engine.nodes.calls import PHASE_OF
from debate_engine.nodes.schedule import next_step, unproposed
from debate_engine.nodes.turn import speaker_of

RETURN = "__return__"
"""The channel of a task's result among a checkpoint's pending writes."""
OTHER_WORKERS = {
    "synthesize": "the judge",
    "assess": "the judge",
    "moderate": "the moderator",
    "summarize": "the summarizer",
}
"""Who works in the steps no debater makes, in words."""
LANDED_HINT = "joins the transcript when its phase ends"

Page = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Step:
    """A step in flight (or stopped in flight): what it is, since when, what has landed, who works."""

    name: str
    """The node: ``propose``, ``critique``, ``refine``, ``turn``, ``summarize``, ``synthesize``..."""
    round: int
    """Its round (the turn, in a roundtable)."""
    since: float
    """When it began, in seconds since the epoch."""
    landed: list[dict[str, Any]]
    """The replies its finished calls wrote, as the live part shows them."""
    working: list[str]
    """Who has not finished yet, in words (``testing (1 of 2 critiques)``)."""
    read_at: float
    """When this was read: the step had run ``read_at - since`` seconds."""
    drafts: list[dict[str, Any]] = field(default_factory=list)
    """What the calls of this server's run of it are writing now (``drafts``), their replies not landed yet."""

    @property
    def running_for(self) -> str:
        """Return how long the step had run when it was read, in words (``4.2 s``, ``3 min 05 s``)."""
        return duration(max(0.0, self.read_at - self.since))


def replies_in(writes: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return the debaters' replies among pending writes with their task's id, in the order they landed; failed
    calls are shown apart."""
    return [
        (task, value)
        for task, channel, value in writes
        if channel == RETURN
        and isinstance(value, dict)
        and {"agent_id", "kind", "content"} <= value.keys()
        and not value.get("failed")
    ]


def landed_turn(index: int, task: str, reply: Mapping[str, Any]) -> dict[str, Any]:
    """Return a landed reply as the live part shows it (it has no place in the transcript yet); ``task`` is the
    call's, whose draft the page then drops."""
    return {
        "seq": f"landed-{index}",
        "task": task,
        "kind": reply["kind"],
        "speaker": reply["agent_id"],
        "content": reply["content"],
        "tokens": count_tokens(reply["content"]),
        "model": reply.get("model"),
        "truncated": reply.get("truncated", False),
        "position": reply.get("position"),
        "latency_s": (reply.get("latency_ms") or 0) / 1000,
    }


def participants(values: Mapping[str, Any], step: str) -> dict[str, int]:
    """Return who makes the calls of ``step`` and how many each, as its phase plans them."""
    state = cast(ConversationState, values)
    settings = values.get("settings") or {}
    agents = [a["id"] for a in settings.get("agents", [])]
    if step == "propose":
        return {a["id"]: 1 for a in unproposed(state)}
    if step == "vote":
        window = (settings.get("escalate") or {}).get("window") or len(agents)
        return {a["id"]: 1 for a in unproposed(state)[:window]}
    if step == "critique":
        return {a: len(agents) - 1 for a in agents}
    if step == "refine":
        return dict.fromkeys(agents, 1)
    if step == "clarify":
        return {a["id"]: 1 for a in settings.get("agents", []) if not is_human(a)}
    if step == "turn":
        return {speaker_of(state, next_step(state)[1]): 1}
    return {OTHER_WORKERS.get(step, f"the {step} step"): 1}


def working(
    expected: Mapping[str, int], landed: Sequence[Mapping[str, Any]], kind: str
) -> list[str]:
    """Return who has fewer replies than planned, in words: the agent, and how far along when it makes several."""
    done = Counter(t["speaker"] for t in landed)
    return [
        who if count == 1 else f"{who} ({done[who]} of {count} {kind}s)"
        for who, count in expected.items()
        if done[who] < count
    ]


def step_name(
    tasks: Sequence[Any], replies: Sequence[tuple[str, Mapping[str, Any]]], values: Any
) -> str:
    """Return the step in flight: the checkpoint's next task, else the phase of the replies, else the schedule's."""
    if tasks:
        return str(tasks[0].name)
    if replies:
        return PHASE_OF.get(str(replies[0][1]["kind"]), str(replies[0][1]["kind"]))
    return next_step(cast(ConversationState, values))[0]


async def step_of(request: Request, thread: str) -> Step | None:
    """Return the step ``thread`` runs (or stopped in) with what has landed; None when there is nothing to show.

    A debate another process runs is read the same way: its writes are in the same checkpointer.
    """
    store, runs = request.app.state.store, request.app.state.runs
    # the pages inside `langgraph dev` read one only on its in-memory runtime (``server_reading``)
    saver = getattr(store, "saver", None)
    if saver is None:
        return None
    config: Any = {"configurable": {"thread_id": thread}}
    found = await saver.aget_tuple(config)
    if found is None or found.checkpoint["channel_values"].get("phase") == "done":
        return None
    writes = found.pending_writes or []
    if any(not channel.startswith("__") for _, channel, _ in writes):
        return None  # the step has written its own update: its turns are in the next checkpoint, at once
    replies = replies_in(writes)
    running = runs.running(thread) or await store.busy(thread)
    if not running and not replies:
        return None
    loaded = await store.load(thread)  # kept for the page that follows: read once
    if loaded is None:
        return None
    values = loaded.values
    if "phase" not in values:  # taken in, not set up yet (the first checkpoint): no step has begun
        return None
    snapshot = await compiled(request, protocol_of(values), saver).aget_state(config)
    name = step_name(snapshot.tasks, replies, values)
    landed = [landed_turn(i, task, r) for i, (task, r) in enumerate(replies)]
    began = datetime.fromisoformat(found.checkpoint["ts"]).timestamp()
    kind = next((k for k, phase in PHASE_OF.items() if phase == name), name)
    return Step(
        name=name,
        round=next_step(cast(ConversationState, values))[1],
        since=max(began, runs.started.get(thread, 0.0)),
        landed=landed,
        working=working(participants(values, name), landed, kind) if running else [],
        read_at=time.time(),
        drafts=runs.drafts.of(thread, [t["task"] for t in landed]),
    )


def compiled(request: Request, protocol: str, saver: Any) -> Any:
    """Return the graph of ``protocol`` on ``saver``, compiled once per server: each poll of a live page reads
    its next tasks, and compiling a graph is CPU work the event loop would do on every one."""
    state = request.app.state
    kept: dict[tuple[str, int], Any] | None = getattr(state, "step_graphs", None)
    if kept is None:
        kept = state.step_graphs = {}
    key = (protocol, id(saver))
    if key not in kept:
        kept[key] = graph_for(protocol, saver)
    return kept[key]


def showing_steps(page: Page) -> Page:
    """Return ``page`` reading first the step its debate runs, for the live part (``request.state.step``)."""

    @functools.wraps(page)
    async def shown(request: Request) -> Response:
        request.state.step = await step_of(request, request.path_params["thread"])
        return await page(request)

    return shown
