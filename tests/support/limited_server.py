"""A loopback OpenAI-compatible server that holds every model to a provider's rate limits, and counts what it refused.

Per model, a requests bucket and a tokens bucket that refill continuously, as providers describe theirs: a limit
of L per period holds at most L and refills L per period. A request is counted when it arrives, as one request
and its prompt plus its output allowance (``max_completion_tokens``), as OpenAI counts them; once answered, the
allowance it did not write is given back. A request either bucket cannot hold is answered 429 with
``Retry-After`` (whole seconds, as providers send it) and ``retry-after-ms``: the time until the refill covers
it. The period is a parameter: the tests and ``bench/ratelimits.py`` run on a scaled clock (limits per second).
With ``states_limits`` it answers as OpenAI does, stating its limits per period and what is left of them in each
answer's ``x-ratelimit-limit-*``, ``-remaining-*`` and ``-reset-*`` headers.

    with LimitedServer(rpm=5, tpm=4000, period_s=1.0) as server:
        ...
        assert server.refused_total() == 0
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine import compile_debate
from tests.support.openai_server import OpenAIServer
from tests.support.prompt_cache import tokens_of, tool_tokens


class LimitedServer(OpenAIServer):
    """An :class:`OpenAIServer` whose models each have ``rpm`` requests and ``tpm`` tokens per ``period_s``."""

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        period_s: float = 1.0,
        words: int = 12,
        states_limits: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(words=words, **kwargs)
        self.rpm, self.tpm, self.period_s = rpm, tpm, period_s
        self.states_limits = states_limits
        self._stating = threading.local()
        """The ``x-ratelimit-*`` headers of the answer this handler thread is sending."""
        self.refused: Counter[str] = Counter()
        """Requests answered 429, by model."""
        self.admitted: list[tuple[float, str, float]] = []
        """Each request let through: when (``time.monotonic()``), the model, the tokens counted at arrival."""
        self.used: list[tuple[float, str, float]] = []
        """Each request answered: when, the model, the tokens it counts once settled (prompt and words written)."""
        self.arrivals: list[tuple[float, str, float | None]] = []
        """Each chat request: when, what it asked (its messages, hashed), and the wait its 429 asked for (None:
        let through)."""
        self._levels: dict[tuple[str, str], tuple[float, float]] = {}
        self._limit_lock = threading.Lock()

    def __enter__(self) -> LimitedServer:
        self.start()
        return self

    def start(self) -> LimitedServer:
        """Start serving; its answers carry the headers :meth:`on_answer` set."""
        super().start()
        assert self._httpd is not None
        self._httpd.RequestHandlerClass = _stating(self._httpd.RequestHandlerClass)
        return self

    def stated(self) -> dict[str, str]:
        """Return (and forget) the ``x-ratelimit-*`` headers of the answer this thread is sending."""
        headers: dict[str, str] = getattr(self._stating, "headers", {})
        self._stating.headers = {}
        return headers

    def _limits(self) -> list[tuple[str, float]]:
        return [(u, v) for u, v in (("requests", self.rpm), ("tokens", self.tpm)) if v]

    def _level(self, model: str, unit: str, limit: float, now: float) -> float:
        taken, at = self._levels.get((model, unit), (0.0, now))
        return max(0.0, taken - limit / self.period_s * (now - at))

    def admit(self, body: dict[str, Any]) -> dict[str, str] | None:
        """Count a chat request against its model's buckets, or refuse it with the wait until they hold it."""
        if "messages" not in body:
            return None
        model = str(body.get("model"))
        allowance = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        costs = {"requests": 1.0, "tokens": float(prompt_tokens(body) + allowance)}
        with self._limit_lock:
            now = time.monotonic()
            levels = {u: self._level(model, u, limit, now) for u, limit in self._limits()}
            short = max(
                (
                    (levels[u] + costs[u] - limit) / (limit / self.period_s)
                    for u, limit in self._limits()
                ),
                default=0.0,
            )
            asked = _asked(body)
            if short > 1e-9:
                self.refused[model] += 1
                wait = self.period_s if costs["tokens"] > (self.tpm or math.inf) else short
                self.arrivals.append((now, asked, math.ceil(wait * 1000) / 1000))
                return {
                    "Retry-After": str(math.ceil(wait)),
                    "retry-after-ms": str(math.ceil(wait * 1000)),
                }
            for unit, _ in self._limits():
                self._levels[(model, unit)] = (levels[unit] + costs[unit], now)
            self.admitted.append((now, model, costs["tokens"]))
            self.arrivals.append((now, asked, None))
        return None

    def on_answer(self, body: dict[str, Any], usage: dict[str, Any]) -> None:
        """Give back the output allowance the answer did not use."""
        model = str(body.get("model"))
        allowance = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        unused = max(0, allowance - int(usage.get("completion_tokens", 0)))
        with self._limit_lock:
            now = time.monotonic()
            self.used.append((now, model, float(prompt_tokens(body) + allowance - unused)))
            if self.tpm:
                level = self._level(model, "tokens", self.tpm, now)
                self._levels[(model, "tokens")] = (max(0.0, level - unused), now)
            if self.states_limits:
                self._stating.headers = self._headers(model, now)

    def _headers(self, model: str, now: float) -> dict[str, str]:
        """Return what OpenAI states of a model's limits after an answer: per unit, the limit per period, what is
        left, and the time until the bucket is full again."""
        out = {}
        for unit, limit in self._limits():
            level = self._level(model, unit, limit, now)
            out[f"x-ratelimit-limit-{unit}"] = f"{limit:g}"
            out[f"x-ratelimit-remaining-{unit}"] = str(max(0, math.floor(limit - level)))
            out[f"x-ratelimit-reset-{unit}"] = (
                f"{math.ceil(level / limit * self.period_s * 1000)}ms"
            )
        return out

    def retried_early(self) -> list[tuple[float, float]]:
        """Return, for each refused request asked again before its ``Retry-After`` ended, how long after it was
        asked again and how long it was told to wait (none: every one waited)."""
        with self._limit_lock:
            arrivals = list(self.arrivals)
        early = []
        for i, (at, asked, wait) in enumerate(arrivals):
            again = next((t for t, same, _ in arrivals[i + 1 :] if same == asked), None)
            if wait is not None and again is not None and again - at < wait - 0.001:
                early.append((again - at, wait))
        return early

    def refused_total(self) -> int:
        """Return the requests this server refused, over every model."""
        with self._limit_lock:
            return sum(self.refused.values())

    def rate(self, model: str | None = None) -> float:
        """Return the requests per period it let through, from the first to the last (0 for fewer than two)."""
        with self._limit_lock:
            times = [t for t, m, _ in self.admitted if model is None or m == model]
        if len(times) < 2:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0]) * self.period_s


def _stating(base: type[BaseHTTPRequestHandler]) -> type[BaseHTTPRequestHandler]:
    """Return the server's request handler, its answers carrying the headers its owner states."""

    class Stating(base):  # type: ignore[misc,valid-type]  # the base server's handler, known at run time
        def end_headers(self) -> None:
            for name, value in self.server.owner.stated().items():
                self.send_header(name, value)
            super().end_headers()

    return Stating


def _asked(body: dict[str, Any]) -> str:
    """Return what a request asks, as a short key: a retry asks exactly the same."""
    text = json.dumps([body.get("model"), body.get("messages")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prompt_tokens(body: dict[str, Any]) -> int:
    """Return a request's prompt tokens as the server counts them (and reports them in its usage)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    return len(tokens_of(messages)) + tool_tokens(body)


MODEL = "openai:limited"
"""The model the rate-limit tests debate with: the server's ``limited``."""


def debate_config(
    folder: Path,
    limits: dict[str, Any] | None = None,
    period_s: float = 1.0,
    agents: int = 2,
    rounds: int = 1,
) -> Path:
    """Write a debate of ``agents`` agents over ``rounds`` on :data:`MODEL` (answers of 128 tokens at most), with
    ``limits`` (``{"rpm": ..., "tpm": ...}``) as its ``rateLimits`` per ``period_s``; return its path."""
    roles = ["kiss", "security", "testing", "performance"][:agents]
    doc: dict[str, Any] = {
        "agents": [{"id": r, "role": r, "model": MODEL} for r in roles],
        "judge": {"role": "generalist", "model": MODEL},
        "debate": {"rounds": rounds, "maxOutputTokens": 128},
    }
    if limits is not None:
        doc["rateLimits"] = {"periodSeconds": period_s, "models": {MODEL: limits}}
    path = folder / f"debate-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(doc))
    return path


def complete(values: dict[str, Any], agents: int = 2, rounds: int = 1) -> bool:
    """Return whether a debate of ``agents`` agents over ``rounds`` kept every turn: each agent's proposal, in
    each round a critique of every other agent and a refinement per agent, and the synthesis."""
    kinds = Counter(t["kind"] for t in values.get("transcript") or [])
    wanted = {
        "proposal": agents,
        "critique": agents * (agents - 1) * rounds,
        "refinement": agents * rounds,
        "synthesis": 1,
    }
    return bool(values.get("solution")) and all(kinds[k] == n for k, n in wanted.items())


def stored_debates(db: Path) -> dict[str, Any]:
    """Return the final values of every debate thread in the SQLite database ``db``, by thread."""
    with sqlite3.connect(db, check_same_thread=False) as conn:
        threads = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
        graph = compile_debate(checkpointer=SqliteSaver(conn))
        return {t: graph.get_state({"configurable": {"thread_id": t}}).values for t in threads}


def charged(values: dict[str, Any]) -> tuple[int, int]:
    """Return the requests and tokens a debate's spend charged (what the provider billed, when all is well)."""
    total = values["spend"]["total"]
    return total["calls"], total["input_tokens"] + total["output_tokens"]


@contextmanager
def serving(monkeypatch: Any, **rates: Any) -> Iterator[LimitedServer]:
    """Yield a limited server with the ``openai:`` models pointed at it."""
    with LimitedServer(**rates) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-limits")
        yield server
