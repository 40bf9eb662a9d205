"""The real `langgraph dev` server driven by the real `langgraph_sdk` client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from debate_engine.providers.local_server import free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
FAKE = {"model": "fake:words=20", "rounds": 1, "agents": "architect,security"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "DEBATE_MODEL": "fake",
    }
    log = (
        open(ROOT / ".pytest_cache" / "langgraph-dev.log", "w")  # noqa: SIM115 - held open for the server's life
        if (ROOT / ".pytest_cache").is_dir()
        else subprocess.DEVNULL
    )  # noqa: SIM115
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser", "--no-reload", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert process.poll() is None, "langgraph dev exited at start-up"
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        pytest.fail("langgraph dev did not answer within 90 s")
    yield url
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    assert process.poll() is not None


def test_the_schema_lists_the_context_fields(server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    assistant = client.assistants.search(graph_id="debate")[0]
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    fields = schemas["context_schema"]["properties"]
    assert {"model", "agents", "rounds", "summarize", "context_window", "max_concurrency", "clarify"} <= set(fields)
    assert all(f.get("description") for f in fields.values())
    assert set(schemas["input_schema"]["properties"]) == {"problem"}


def test_a_streamed_run_completes_with_custom_events(server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    thread = client.threads.create()
    parts = list(
        client.runs.stream(
            thread["thread_id"],
            "debate",
            input={"problem": "Design a cache"},
            context=FAKE,
            stream_mode=["updates", "custom"],
        )
    )
    custom = [p.data for p in parts if p.event == "custom"]
    assert {"phase_started", "contribution"} <= {e["event"] for e in custom}
    assert sum(e["event"] == "contribution" for e in custom) == 2 + 2 + 2 + 1
    assert any(p.event == "updates" and "synthesize" in p.data for p in parts)
    values = client.threads.get_state(thread["thread_id"])["values"]
    assert values["solution"]["description"]


def test_a_clarification_interrupt_is_resumed(server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    thread = client.threads.create()
    context = {**FAKE, "clarify": True}
    client.runs.wait(thread["thread_id"], "debate", input={"problem": "Design a queue"}, context=context)
    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == ["collect_answers"]
    asked = state["tasks"][0]["interrupts"][0]["value"]["questions"]
    assert {q["agent_id"] for q in asked} == {"architect", "security"}
    client.runs.wait(
        thread["thread_id"], "debate", command={"resume": {"architect": ["Kafka is available."]}}, context=context
    )
    values = client.threads.get_state(thread["thread_id"])["values"]
    clarifications = [t for t in values["transcript"] if t["kind"] == "clarification"]
    assert any("A: Kafka is available." in t["content"] for t in clarifications)
    assert any("A: (no answer)" in t["content"] for t in clarifications)
    assert values["solution"]
