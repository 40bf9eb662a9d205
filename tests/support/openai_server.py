"""A real, stdlib-only OpenAI-compatible HTTP server for tests.

Mocking the client library only checks our assumptions about the wire. This server speaks real HTTP, JSON and
SSE on loopback, so the real `openai` client and `langchain_openai` run their own retry, timeout, parsing and
structured-output code against it. Faults (rate limits, 5xx, broken JSON, dropped or hanging connections, a
leaked API key) can be injected per request, and every request is recorded so tests can assert on the exact
prompt the client sent.

    with OpenAIServer(words=20) as server:
        server.faults.extend(["429", "500"])
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test")

It is one module because the server, its faults and its record of requests share one request loop.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support.fake_replies import (
    fake_value as _fake,
)  # a module global, so a test can patch the tool replies
from tests.support.fake_replies import reply_words, text_of, wanted_tool
from tests.support.prompt_cache import MarkedCache, PromptCache, Read, tokens_of, tool_tokens

FAULTS = frozenset(
    {
        "404",
        "429",
        "500",
        "503",
        "malformed",
        "drop",
        "hang",
        "empty",
        "length",
        "echo_key",
        "badtool",
    }
)
MODEL = "test-model"


def _hung_up(connection: socket.socket) -> bool:
    """Return whether the client closed ``connection`` (its end of stream is waiting to be read)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _HTTPServer(ThreadingHTTPServer):
    """Daemon handler threads, so a hanging handler never blocks shutdown or interpreter exit."""

    daemon_threads = True
    owner: OpenAIServer

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup that can stall; loopback needs none.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Fault tests hang up on purpose; only real server bugs deserve a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Turns one HTTP request into a recorded, possibly faulted, OpenAI-shaped reply."""

    protocol_version = "HTTP/1.1"  # keep-alive, like the real API; streams use chunked encoding
    timeout = 10  # idle keep-alive connections release their thread
    # TCP_NODELAY, as real servers set: a reply's head and body are two writes, and with Nagle's algorithm
    # the body waits for the client's delayed ACK of the head (up to 40 ms).
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests read `server.requests` instead."""

    def do_GET(self) -> None:
        self._handle(b"")

    def do_POST(self) -> None:
        self._handle(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _handle(self, raw: bytes) -> None:
        owner = self.server.owner
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        fault = owner._next_fault(body.get("model") if isinstance(body, dict) else None)
        # a limited server's rate limits (tests/support/limited_server.py), at arrival: the headers of its 429
        refused = owner.admit(body) if fault is None and isinstance(body, dict) else None
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner._record(self.path, headers, body, fault or (None if refused is None else "429"))
        opened = owner._open(self.connection, hangs=fault == "hang")
        try:
            if refused is None:
                self._answer(owner, body, fault)
            else:
                self._error(429, "Rate limit reached.", "rate_limit_exceeded", refused)
        finally:
            owner._close(opened)

    def _answer(self, owner: OpenAIServer, body: Any, fault: str | None) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        # a hang holds the request open (counted in `in_flight`) until the client hangs up, the server stops or
        # hang_s passes; then it answers as usual
        if fault == "drop" or (fault == "hang" and self._hang(owner)):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault == "404":
            self._error(
                404,
                f"The model {body.get('model') if isinstance(body, dict) else '?'} does not exist.",
                "model_not_found",
            )
        elif fault in ("429", "500", "503"):
            extra = {"Retry-After": f"{owner.retry_after:g}"} if fault == "429" else {}
            code = "rate_limit_exceeded" if fault == "429" else None
            self._error(int(fault), f"Injected {fault} fault.", code, extra)
        elif fault == "echo_key":
            key = self.headers.get("Authorization", "")
            self._error(401, f"Incorrect API key provided: {key}.", "invalid_api_key")
        elif fault == "malformed":
            self._send(200, b'{"id": "x", "choices": [')
        elif fault not in (None, "hang", "empty", "length", "badtool"):
            self._error(500, f"Unknown test fault {fault!r}; known: {sorted(FAULTS)}.")
        elif self.command == "GET" and path.endswith("/models"):
            model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "tests"}
            self._send(200, json.dumps({"object": "list", "data": [model]}).encode())
        elif (
            self.command == "POST" and path.endswith("/chat/completions") and isinstance(body, dict)
        ):
            cached = (
                owner.prompt_cache.read(body) if owner.prompt_cache is not None else None
            )  # as it arrives
            owner._stopping.wait(owner.latency_s)
            self._chat(body, fault, cached)
            if owner.prompt_cache is not None and cached is not None:
                owner.prompt_cache.commit(
                    cached
                )  # answered: its prompt now serves the requests after it
        else:
            self._error(404, f"No route for {self.command} {path}.")

    def _hang(self, owner: OpenAIServer) -> bool:
        """Answer nothing for ``hang_s``; True when the client hung up or the server stops before that."""
        deadline = time.monotonic() + owner.hang_s
        while time.monotonic() < deadline:
            if owner._stopping.is_set():
                return True
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if readable:
                if _hung_up(self.connection):
                    return True  # the client hung up: the request is closed
                time.sleep(0.02)  # a pipelined request: still ours to ignore
        return False

    def _send(self, status: int, data: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = {
            "Content-Type": "application/json",
            "Content-Length": str(len(data)),
            **(extra or {}),
        }
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(
        self,
        status: int,
        message: str,
        code: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        error = {
            "message": message,
            "type": "invalid_request_error" if status < 500 else "server_error",
        }
        self._send(
            status,
            json.dumps({"error": {**error, "param": None, "code": code}}).encode(),
            extra=extra,
        )

    def _chat(self, body: dict[str, Any], fault: str | None, cached: Read | None = None) -> None:
        owner = self.server.owner
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        prompt_tokens = len(tokens_of(messages)) + tool_tokens(body)
        last_user = next(
            (text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        words = [] if fault == "empty" else reply_words(last_user, owner.words)
        if owner.author is not None and words:  # a test writes the prose replies
            words = owner.author(body, " ".join(words).capitalize() + ".").split()
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if fault == "length":
            limit = min(limit or len(words), max(1, len(words) // 2))
        finish = "length" if limit is not None and limit < len(words) else "stop"
        words = words[:limit] if finish == "length" else words
        content = (
            " ".join(words)
            if owner.author is not None
            else " ".join(words).capitalize() + "."
            if words
            else ""
        )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        tools = body.get("tools") or []
        if tools and body.get("tool_choice") != "none" and fault not in ("empty", "length"):
            wanted = wanted_tool(body)
            funcs = [t["function"] for t in tools if isinstance(t, dict) and "function" in t] or [
                {"name": "tool"}
            ]
            func = next((f for f in funcs if f["name"] == wanted), funcs[0])
            params = func.get("parameters") or {}
            arguments = json.dumps(
                _fake(params, params.get("$defs") or params.get("definitions") or {}, func["name"])
            )
            if fault == "badtool":  # what small models do: the arguments cut short, unparseable
                arguments = arguments[: len(arguments) // 2]
            if (
                owner.tool_args is not None
            ):  # a test scripts the structured answer (positions, votes)
                arguments = json.dumps(owner.tool_args(body, func["name"], json.loads(arguments)))
            if owner.cut_tools and limit is not None and len(arguments.split()) > limit:
                arguments = " ".join(
                    arguments.split()[:limit]
                )  # cut, yet reported as llama.cpp does: tool_calls
            call: dict[str, Any] = {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function"}
            call["function"] = {"name": func["name"], "arguments": arguments}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            words, finish = arguments.split(), "tool_calls"
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": len(words)}
        usage["total_tokens"] = prompt_tokens + len(words)
        if cached is not None:
            usage["prompt_tokens_details"] = cached.details
        with owner._lock:
            owner._usage += usage["total_tokens"]
        owner.on_answer(body, usage)
        head = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "created": int(time.time())}
        head["model"] = body.get("model", owner.model)
        if body.get("stream"):
            with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(head, message, finish, usage, with_usage)
        else:
            choice_out = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            reply = {**head, "object": "chat.completion", "choices": [choice_out], "usage": usage}
            self._send(200, json.dumps(reply).encode())

    def _stream(
        self,
        head: dict[str, Any],
        message: dict[str, Any],
        finish: str,
        usage: dict[str, Any],
        with_usage: bool,
    ) -> None:
        """Server-sent events in chunked encoding, shaped like the real API's `chat.completion.chunk` stream."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deltas: list[dict[str, Any]] = [
            {"role": "assistant", "content": None if "tool_calls" in message else ""}
        ]
        if "tool_calls" in message:
            # as the real API streams a call: its name first, then its arguments in pieces
            call = message["tool_calls"][0]
            args = call["function"]["arguments"]
            first = {**call, "function": {**call["function"], "arguments": ""}}
            deltas[0]["tool_calls"] = [{"index": 0, **first}]
            step = max(1, -(-len(args) // 8))
            deltas += [
                {"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + step]}}]}
                for i in range(0, len(args), step)
            ]
        elif message["content"]:
            deltas += [
                {"content": p if i == 0 else " " + p}
                for i, p in enumerate(message["content"].split(" "))
            ]
        deltas.append({})
        finishes = [None] * (len(deltas) - 1) + [finish]
        events: list[Any] = [
            ([{"index": 0, "delta": d, "logprobs": None, "finish_reason": f}], None)
            for d, f in zip(deltas, finishes, strict=True)
        ]
        if with_usage:
            events.append(([], usage))
        for choices, chunk_usage in events:
            chunk = {**head, "object": "chat.completion.chunk", "choices": choices}
            self._chunk(
                f"data: {json.dumps({**chunk, 'usage': chunk_usage} if with_usage else chunk)}\n\n".encode()
            )
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


class OpenAIServer:
    """Loopback OpenAI-compatible server; `with OpenAIServer() as server:` then point a client at `server.base_url`.

    Attributes tests may set: `faults` (deque of fault names, one consumed per request, FIFO), `always` (a fault
    for every request once `faults` is empty), `model_always` (a fault for every request naming that model, before
    the others), `hang_s`, `retry_after`, `words`, `latency_s` (how long each chat reply takes, to stand in for a
    real model), `tool_args` (rewrite a tool call's arguments: `(body, name, args) -> args`), `author` (rewrite a prose
    reply: `(body, text) -> text`), `prompt_cache` (a `PromptCache`: report OpenAI's `cached_tokens` by its rule; a `MarkedCache`:
    Anthropic's, reads and writes at marked blocks; None, the default: report none). Faults: see `FAULTS`. `peak_in_flight` is the most requests it was ever answering at once.
    """

    def __init__(
        self, words: int = 40, *, model: str = MODEL, hang_s: float = 30.0, retry_after: float = 1.0
    ) -> None:
        self.words, self.model, self.hang_s, self.retry_after = words, model, hang_s, retry_after
        self.latency_s = 0.0
        self.faults: deque[str] = deque()
        self.always: str | None = None
        self.model_always: dict[str, str] = {}
        self.cut_tools = False
        self.prompt_cache: PromptCache | MarkedCache | None = None
        self.tool_args: Any = None
        self.author: Any = None
        self.in_flight = 0
        self.peak_in_flight = 0
        self._open_requests: dict[int, socket.socket | None] = {}
        """Requests being answered, by a number of their own: a hanging one keeps its connection, to be checked."""
        self._opened = 0
        self.requests: list[
            dict[str, Any]
        ] = []  # {"path", "headers" (lower-case keys), "body", "fault", "time"}
        self._lock = threading.Lock()
        self._usage = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> OpenAIServer:
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Wake hanging handlers first, then stop accepting; daemon handler threads are never joined."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def prompts(self) -> list[str]:
        """Per chat request, all message texts joined by newlines: the exact prompt text the client sent."""
        with self._lock:
            bodies = [
                r["body"]
                for r in self.requests
                if r["path"].split("?")[0].endswith("/chat/completions")
            ]
        messages = [
            [m for m in (b or {}).get("messages") or [] if isinstance(m, dict)] for b in bodies
        ]
        return ["\n".join(text_of(m.get("content")) for m in ms) for ms in messages]

    def usage_total(self) -> int:
        """Sum of `total_tokens` this server reported across its successful replies."""
        with self._lock:
            return self._usage

    def admit(self, body: dict[str, Any]) -> dict[str, str] | None:
        """Return the headers of a 429 refusing this chat request, or None to answer it (no limit here)."""
        return None

    def on_answer(self, body: dict[str, Any], usage: dict[str, Any]) -> None:
        """Hear what an answered chat request used (a limited server settles its tokens)."""

    def _open(self, connection: socket.socket, hangs: bool) -> int:
        """Count a request open, after closing the hanging ones whose client has hung up already.

        A hanging handler notices its client's hang-up only at its next poll; a request that arrives
        first must not be counted beside a connection its client closed before sending it.
        """
        with self._lock:
            for number, held in list(self._open_requests.items()):
                if held is not None and _hung_up(held):
                    self._close_locked(number)
            self._opened += 1
            self._open_requests[self._opened] = connection if hangs else None
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return self._opened

    def _close(self, number: int) -> None:
        with self._lock:
            self._close_locked(number)

    def _close_locked(self, number: int) -> None:
        if self._open_requests.pop(number, False) is not False:
            self.in_flight -= 1

    def _next_fault(self, model: str | None = None) -> str | None:
        if model in self.model_always:
            return self.model_always[model]
        try:
            return self.faults.popleft()
        except IndexError:
            return self.always

    def _record(self, path: str, headers: dict[str, str], body: Any, fault: str | None) -> None:
        with self._lock:
            self.requests.append(
                {
                    "path": path,
                    "headers": headers,
                    "body": body,
                    "fault": fault,
                    "time": time.time(),
                }
            )


@contextmanager
def serving(monkeypatch: Any, words: int = 40, provider: str = "openai") -> Iterator[OpenAIServer]:
    """Yield a server for one test, the engine's ``openai:`` (or ``openrouter:``) models pointed at it with a test key."""
    with OpenAIServer(words=words) as srv:
        monkeypatch.setenv(f"{provider.upper()}_BASE_URL", srv.base_url)
        monkeypatch.setenv(f"{provider.upper()}_API_KEY", f"sk-test-{provider}-loopback")
        yield srv
