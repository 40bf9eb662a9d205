"""Engine overhead: the share of a round's wall time with no model request in flight, on a 2 s model.

A debate of 3 agents and 2 rounds of 200-word replies, then a roundtable of 6 turns, against the loopback
OpenAI-compatible server answering every chat request after exactly 2 s, on SQLite, summaries on as by
default. The server records when it starts and finishes handling each request; the time the union of those
intervals leaves uncovered is the engine's own (views and prompts, the client library, parsing, state,
checkpoints, scheduling). A round runs from the start of its critique node to the next round's (the
synthesis node's for the last), as a callback sees them in the thread that runs the node; the segment before
the first critique holds set-up and the proposals. Beside it,
the critical path: wall time less the sequential waves of requests times 2 s. A warm-up run of each protocol
on an instant model comes first, so imports and first connections are not counted. Issue 33: under 2% of a
round. The engine's CPU time in each segment (its process's, the client library's work included) is printed
too: the time with no request in flight grows with the machine's load, the CPU time only with the work.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from bench.common import PROBLEM, THREE, environment, sqlite_saver, table
from debate_engine import Context, RoundtableContext, compile_debate, compile_roundtable
from tests.support.openai_server import OpenAIServer, _Handler

LATENCY_S, WORDS, ROUNDS, TURNS = 2.0, 200, 2, 6
Span = tuple[float, float]
"""When the server started and finished handling one chat request (``perf_counter``)."""
Instant = tuple[float, float]
"""A moment of the engine's process: ``perf_counter`` and ``process_time``."""


def _now() -> Instant:
    return time.perf_counter(), time.process_time()


@dataclass(frozen=True)
class Segment:
    """A stretch of one run's wall time and the request intervals of the whole run."""

    name: str
    began: float
    ended: float
    spans: Sequence[Span]
    cpu_s: float = 0.0
    """CPU seconds the engine's process used in the stretch: its work, whatever else keeps the machine busy."""

    @property
    def wall(self) -> float:
        return self.ended - self.began

    def in_flight(self) -> float:
        """Return the seconds in which at least one request was with the model."""
        clipped = sorted((max(a, self.began), min(b, self.ended)) for a, b in self.spans)
        covered, reached = 0.0, self.began
        for start, end in clipped:
            if end > reached:
                covered += end - max(start, reached)
                reached = end
        return covered

    def starts(self) -> list[float]:
        """Return when the requests that started in this segment started, in order."""
        return sorted(a for a, _ in self.spans if self.began <= a < self.ended)

    def waves(self) -> int:
        """Count sequential steps: a request starting once the open wave's first reply is back opens one."""
        count, opened = 0, float("-inf")
        for start in self.starts():
            if start >= opened + LATENCY_S * 0.9:
                count, opened = count + 1, start
        return count


class _Provider:
    """The loopback server in a process of its own, as a real provider is: its work never takes the engine's
    interpreter lock. It reports each chat request's interval; ``latency_s`` is set between runs."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._latency = ctx.Value("d", 0.0)
        self._answered = ctx.Value("i", 0)
        self._received = 0
        self._spans: Any = ctx.Queue()
        self._stop = ctx.Event()
        ready: Any = ctx.Queue()
        self._proc = ctx.Process(
            target=_serve,
            args=(self._latency, self._answered, self._spans, self._stop, ready),
            daemon=True,
        )
        self._proc.start()
        self.base_url: str = ""
        while not self.base_url:
            try:
                self.base_url = ready.get(timeout=1)
            except queue.Empty:
                if not self._proc.is_alive():
                    raise RuntimeError("the benchmark's model server exited at start") from None

    @property
    def latency_s(self) -> float:
        return float(self._latency.value)

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        self._latency.value = value

    def drain(self, into: list[Span]) -> None:
        """Move every interval reported so far into ``into``: as many as the server has answered requests."""
        deadline = time.monotonic() + 10
        while self._received < self._answered.value and time.monotonic() < deadline:
            try:
                into.append(self._spans.get(timeout=0.5))
            except queue.Empty:
                continue
            self._received += 1

    def close(self) -> None:
        self._stop.set()
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()


def _serve(latency: Any, answered: Any, spans: Any, stop: Any, ready: Any) -> None:
    """Run the server (in the child process) until ``stop``; ``perf_counter`` is the machine's monotonic clock,
    so the intervals compare with the engine's."""

    class TimedHandler(_Handler):
        def do_POST(self) -> None:
            server.latency_s = latency.value
            began = time.perf_counter()
            try:
                super().do_POST()
            finally:
                with (
                    answered.get_lock()
                ):  # counted with its span sent, so the engine waits for every span
                    spans.put((began, time.perf_counter()))
                    answered.value += 1

    with OpenAIServer(words=WORDS) as server:
        assert server._httpd is not None
        server._httpd.RequestHandlerClass = TimedHandler
        ready.put(server.base_url)
        stop.wait()


class _Spans(list[Span]):
    """The intervals of the provider's chat requests, fetched from its process when read."""

    def __init__(self, provider: _Provider) -> None:
        super().__init__()
        self.provider = provider

    def clear(self) -> None:
        self.provider.drain([])  # a run before this one may still be reporting
        super().clear()

    def __iter__(self) -> Iterator[Span]:
        self.provider.drain(self)
        return super().__iter__()


@contextmanager
def _server() -> Iterator[tuple[_Provider, list[Span]]]:
    """Yield the provider's process, the engine's ``openai:`` models pointed at it, and its chat intervals."""
    provider = _Provider()
    try:
        with environment(OPENAI_BASE_URL=provider.base_url, OPENAI_API_KEY="sk-bench-000000"):
            yield provider, _Spans(provider)
    finally:
        provider.close()


class _NodeStarts(BaseCallbackHandler):
    """Record when each critique and the synthesis node starts, in the thread that runs it.

    A custom stream event reaches the caller's loop late when the machine is busy; requests of the phase can
    have left by then, and would count in the segment before.
    """

    def __init__(self) -> None:
        self.marks: dict[tuple[str, int], Instant] = {}

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, metadata: Any = None, **kwargs: Any
    ) -> None:
        """Keep the first start of a critique or synthesis node in each graph step."""
        name, meta = kwargs.get("name"), metadata or {}
        if name in ("critique", "synthesize") and meta.get("langgraph_node") == name:
            self.marks.setdefault((name, meta.get("langgraph_step", 0)), _now())


def _rounds(starts: _NodeStarts, began: Instant) -> list[tuple[str, Instant]]:
    """Return where each segment of a debate begins: set-up, every round's critique, the synthesis."""
    cuts = [("set-up + proposals", began)]
    for (name, _), at in sorted(starts.marks.items(), key=lambda item: item[1]):
        cuts.append(("synthesis" if name == "synthesize" else f"round {len(cuts)}", at))
    return cuts


def _debate(folder: Path, spans: list[Span], rounds: int, thread: str) -> list[Segment]:
    """Run one debate on SQLite; return its segments, then the whole run."""
    context = Context(model="openai:bench", agents=THREE, rounds=rounds)
    starts = _NodeStarts()
    config: Any = {"configurable": {"thread_id": thread}, "callbacks": [starts]}
    with sqlite_saver(folder / f"{thread}.sqlite") as saver:
        graph = compile_debate(checkpointer=saver)
        spans.clear()
        began = _now()
        graph.invoke({"problem": PROBLEM}, config, context=context)
        ended = _now()
    cuts = _rounds(starts, began)
    ends = [at for _, at in cuts[1:]] + [ended]
    parts = [_segment(name, at, end, spans) for (name, at), end in zip(cuts, ends, strict=True)]
    return [*parts, _segment(f"whole debate ({rounds} rounds)", began, ended, spans)]


def _segment(name: str, began: Instant, ended: Instant, spans: list[Span]) -> Segment:
    return Segment(name, began[0], ended[0], list(spans), cpu_s=ended[1] - began[1])


def _roundtable(folder: Path, spans: list[Span], turns: int, thread: str) -> Segment:
    """Run one roundtable on SQLite; return the whole run."""
    context = RoundtableContext(model="openai:bench", agents=THREE, turns=turns)
    config: Any = {"configurable": {"thread_id": thread}}
    with sqlite_saver(folder / f"{thread}.sqlite") as saver:
        graph = compile_roundtable(checkpointer=saver)
        spans.clear()
        began = _now()
        graph.invoke({"problem": PROBLEM}, config, context=context)
        ended = _now()
    return _segment(f"whole roundtable ({turns} turns)", began, ended, spans)


def _row(part: Segment) -> list[Any]:
    """Return one table row: the segment's requests, waves, wall time and the engine's share of it."""
    busy, waves = part.in_flight(), part.waves()
    idle = part.wall - busy
    return [
        part.name,
        len(part.starts()),
        waves,
        f"{part.wall:.3f}",
        f"{busy:.3f}",
        f"{idle * 1000:.0f}",
        f"{idle / part.wall:.2%}",
        f"{(part.wall - waves * LATENCY_S) / part.wall:.2%}",
        f"{part.cpu_s * 1000:.0f}",
    ]


def bench_overhead(folder: Path) -> list[Segment]:
    """Print the engine's share of each round's wall time on a 2 s model; return the segments measured."""
    with _server() as (server, spans):
        _debate(folder, spans, 1, "overhead-warm-up")
        _roundtable(folder, spans, 2, "overhead-warm-up-rt")
        server.latency_s = LATENCY_S
        parts = _debate(folder, spans, ROUNDS, "overhead")
        parts.append(_roundtable(folder, spans, TURNS, "overhead-rt"))
    table(
        [
            "segment",
            "requests",
            "waves",
            "wall s",
            "in flight s",
            "engine ms",
            "engine share",
            "wall - waves x 2 s",
            "engine CPU ms",
        ],
        [_row(part) for part in parts],
    )
    print(
        f"(3 agents, {WORDS}-word replies, every reply {LATENCY_S:g} s, summaries as by default, SQLite; "
        "engine share = time with no request in flight / wall time; issue 33: under 2% of a round; "
        "engine CPU = the engine process's CPU time in the segment, which the machine's load does not inflate)\n"
    )
    return parts
