"""What this server's runs are writing now: each call's text as its model streams it, until its reply lands.

A run the viewer drives streams LangGraph's ``messages`` mode beside its
updates, so each model call hands over its tokens as they come (a real
provider streams its answer, the fake writes a few words at a time). A draft is
kept per task (the call's ``model_call:<id>`` namespace, the id its reply's
pending write carries); a retry of the call starts its draft again. A
structured reply streams the JSON of its tool call: the draft shows its prose
field (``reply``) as far as it has come, parsed leniently. Drafts live in
memory only: they are what the checkpoint will hold once the call ends, shown
early; a run by another process shows its replies as they land instead. The
run's ``tasks`` stream tells each call's end: a failed call's draft goes (it
has no reply to land), an answered one's stays until the page shows the reply.
Every draft of a thread goes when a node of the graph ends (the phase wrote its
turns; a summary's task ending beside the calls is not one), when a person is
asked, and when its run ends.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.utils.json import parse_partial_json

INTERRUPT = "__interrupt__"
RETURN = "__return__"
"""Where a task's result holds what the task returned (a call's reply)."""
PROSE = "reply"
"""The field of a debater's structured answer that holds its prose (``nodes.calls``)."""
SHOWN_CHARS = 20_000
"""A draft shows at most this many characters, its end: the page polls it several times a second."""


@dataclass
class Draft:
    """One call's text so far."""

    task: str
    """The task id of the call: its reply's pending write carries it."""
    name: str
    """The task's name (``model_call``): an update under another name means the step has ended."""
    who: str
    kind: str
    message: str | None
    """The id of the streamed message: a new one (a retry, a fallback) starts the draft again."""
    text: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    """A tool call's arguments so far (JSON, cut anywhere)."""
    since: float = field(default_factory=time.time)
    done: bool = False
    prose: str = ""
    """The ``reply`` field as last read: arguments cut inside an escape (``\\u00``) do not parse for a moment."""

    def shown(self) -> str:
        """Return the prose written so far: the ``reply`` field of the tool call's arguments once it has begun
        (what the reply will hold), else the text."""
        if self.args:
            self.prose = _prose("".join(self.args)) or self.prose
        return (self.prose or "".join(self.text))[-SHOWN_CHARS:]


def text_of(content: Any) -> str:
    """Return a chunk's text: a string, or the text blocks of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b if isinstance(b, str) else str(b.get("text") or "")
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        )
    return ""


def _prose(arguments: str) -> str:
    try:
        parsed = parse_partial_json(arguments)
    except (json.JSONDecodeError, ValueError):  # not yet an object's first key
        return ""
    value = parsed.get(PROSE) if isinstance(parsed, dict) else None
    return value if isinstance(value, str) else ""


def task_of(namespace: str) -> tuple[str, str]:
    """Return the name and id of the task a namespace ends in (``propose:..|model_call:ID`` -> model_call, ID)."""
    name, _, task = namespace.rsplit("|", 1)[-1].partition(":")
    return name, task


class Drafts:
    """The drafts of this server's runs, by thread and task."""

    def __init__(self) -> None:
        self.by_thread: dict[str, dict[str, Draft]] = {}

    def take(self, thread: str, mode: str, event: Any, nodes: Collection[str]) -> None:
        """Take one event of a run's stream (``messages``, ``tasks`` or ``updates``); ``nodes`` are the graph's."""
        if mode == "messages":  # a call's tokens, shown on its page as they come
            self.add(thread, *event)
        elif mode == "tasks":
            self.settled(thread, event, nodes)
        elif (
            mode == "updates" and INTERRUPT in event
        ):  # a person is asked: the step's calls have ended
            self.end(thread)

    def add(self, thread: str, chunk: BaseMessage, meta: Mapping[str, Any]) -> None:
        """Add a streamed chunk to its call's draft (a chunk of a call no debater makes has no ``agent_id``)."""
        namespace = str(meta.get("langgraph_checkpoint_ns", ""))
        if "|" not in namespace:
            return  # a model called by a node itself, not by a call's task: nothing lands for it
        name, task = task_of(namespace)
        drafts = self.by_thread.setdefault(thread, {})
        draft = drafts.get(task)
        if draft is None or draft.message != chunk.id:
            who = str(meta.get("agent_id") or meta.get("langgraph_node", "the model"))
            draft = drafts[task] = Draft(task, name, who, str(meta.get("kind", "")), chunk.id)
        if text := text_of(chunk.content):
            draft.text.append(text)
        for piece in getattr(chunk, "tool_call_chunks", None) or []:
            draft.args.append(piece.get("args") or "")
        if getattr(chunk, "chunk_position", None) == "last":
            draft.done = True

    def settled(self, thread: str, event: Mapping[str, Any], nodes: Collection[str]) -> None:
        """Take a task's end (LangGraph's ``tasks`` stream): a call that failed has no reply to land, so its draft
        goes; a call that answered keeps its draft until the page shows its reply. When one of the graph's
        ``nodes`` ends (a phase wrote its turns, or a person is asked), every draft of the thread goes."""
        if "result" not in event and "error" not in event:
            return  # a task starting
        drafts = self.by_thread.get(thread)
        if not drafts:
            return
        if event.get("name") in nodes:
            self.by_thread.pop(thread, None)
            return
        draft = drafts.get(str(event.get("id")))
        if draft is None:
            return
        result = event.get("result")
        reply = result.get(RETURN) if isinstance(result, Mapping) else None
        if event.get("error") or (isinstance(reply, Mapping) and reply.get("failed")):
            drafts.pop(draft.task, None)
        else:
            draft.done = True

    def end(self, thread: str) -> None:
        """Forget a thread's drafts: its run ended, or it asks a person."""
        self.by_thread.pop(thread, None)

    def of(self, thread: str, landed: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Return the thread's drafts with text, oldest first, for the page; ``landed`` holds tasks whose reply
        the page shows already."""
        gone = set(landed)
        return [
            {"task": d.task, "who": d.who, "kind": d.kind, "text": text, "done": d.done}
            for d in sorted(self.by_thread.get(thread, {}).values(), key=lambda d: d.since)
            if d.task not in gone and (text := d.shown())
        ]
