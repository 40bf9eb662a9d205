"""The real `langgraph dev` server, started on a free loopback port, driven by the real `langgraph_sdk` client.

The graph is whatever ``langgraph.json`` serves (read at test time). Every run
uses the fake model, and the server runs with analytics, tracing and the
version check off, so nothing leaves the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate_engine.providers.local_server import free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
AGENTS = ["architect", "security"]
FAKE = {"model": "fake:words=20", "rounds": 1, "agents": ",".join(AGENTS)}
ONE_ROUND_IDS = [
    "proposal:r1:architect",
    "proposal:r1:security",
    "critique:r1:architect->security",
    "critique:r1:security->architect",
    "refinement:r1:architect",
    "refinement:r1:security",
    "synthesis:r1:judge",
]
"""Two agents, one round, written out by hand: 2 proposals, 2 critiques, 2 refinements, the judge."""


def served_graphs() -> dict[str, str]:
    """Return the graphs ``langgraph.json`` declares (id -> ``path.py:attr`` or ``module:attr``); each target must exist."""
    graphs: dict[str, str] = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    for target in graphs.values():
        location, _, attribute = target.rpartition(":")
        assert location and attribute, target
        if location.endswith(".py"):
            assert (ROOT / location).is_file(), f"langgraph.json points at a missing file: {target}"
        else:
            assert importlib.util.find_spec(location) is not None, (
                f"langgraph.json names a missing module: {target}"
            )
    return graphs


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    drop = {
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "OPENAI_BASE_URL",
        "OPENROUTER_BASE_URL",
        "DEBATE_DB",
    }
    env = {
        **{k: v for k, v in os.environ.items() if k not in drop},
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "DEBATE_MODEL": "fake",
    }
    log_path = tmp_path_factory.mktemp("langgraph-dev") / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - held open for the server's life
    command = [
        str(Path(sys.executable).parent / "langgraph"),
        "dev",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
        "--n-jobs-per-worker",
        "4",
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    import httpx

    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(f"langgraph dev exited at start-up:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"langgraph dev did not answer within 90 s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        log.close()
    assert process.poll() is not None


@pytest.fixture(scope="module")
def graph_id() -> str:
    """Return the phase debate: served by the factory ``graph/server.py:debate``."""
    graphs = served_graphs()
    found = [g for g, target in graphs.items() if target.endswith("graph/server.py:debate")]
    assert len(found) == 1, graphs
    return found[0]


def test_every_graph_in_langgraph_json_is_served(server: str) -> None:
    client = client_for(server)
    for graph in served_graphs():
        assert [a["graph_id"] for a in client.assistants.search(graph_id=graph)] == [graph]


def client_for(url: str) -> Any:
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=url)


def test_the_schema_lists_the_context_fields(server: str, graph_id: str) -> None:
    client = client_for(server)
    assistant = client.assistants.search(graph_id=graph_id)[0]
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    fields = schemas["context_schema"]["properties"]
    assert {
        "model",
        "agents",
        "rounds",
        "summarize",
        "context_window",
        "max_concurrency",
        "clarify",
    } <= set(fields)
    assert all(f.get("description") for f in fields.values())
    # the problem, and optionally the run's settings kept with the input (see InputState)
    assert set(schemas["input_schema"]["properties"]) == {"problem", "context"}


def test_a_streamed_run_completes_with_custom_events(server: str, graph_id: str) -> None:
    client = client_for(server)
    thread = client.threads.create()
    parts = list(
        client.runs.stream(
            thread["thread_id"],
            graph_id,
            input={"problem": "Design a cache"},
            context=FAKE,
            stream_mode=["updates", "custom"],
        )
    )
    custom = [p.data for p in parts if p.event == "custom"]
    assert {"phase_started", "contribution"} <= {e["event"] for e in custom}
    assert sum(e["event"] == "contribution" for e in custom) == len(ONE_ROUND_IDS)
    assert any(p.event == "updates" and "synthesize" in p.data for p in parts)
    values = client.threads.get_state(thread["thread_id"])["values"]
    assert [t["id"] for t in values["transcript"]] == ONE_ROUND_IDS
    assert values["solution"]["description"]


def test_a_clarification_interrupt_is_resumed(server: str, graph_id: str) -> None:
    client = client_for(server)
    thread = client.threads.create()
    context = {**FAKE, "clarify": True}
    client.runs.wait(
        thread["thread_id"], graph_id, input={"problem": "Design a queue"}, context=context
    )
    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == ["clarify"]  # the node that asked waits for the answers
    asked = state["tasks"][0]["interrupts"][0]["value"]["questions"]
    assert {q["agent_id"] for q in asked} == set(AGENTS)
    client.runs.wait(
        thread["thread_id"],
        graph_id,
        command={"resume": {"architect": ["Kafka is available."]}},
        context=context,
    )
    values = client.threads.get_state(thread["thread_id"])["values"]
    clarifications = [t for t in values["transcript"] if t["kind"] == "clarification"]
    assert {t["speaker"] for t in clarifications} == set(AGENTS)
    assert any(
        "A: Kafka is available." in t["content"]
        for t in clarifications
        if t["speaker"] == "architect"
    )
    assert all(
        "A: (no answer)" in t["content"] for t in clarifications if t["speaker"] == "security"
    )
    assert values["solution"]


def test_a_second_run_on_the_same_thread_is_a_clean_debate_with_its_own_settings(
    server: str, graph_id: str
) -> None:
    """The fake model repeats identifiers it is shown, so a turn of the second debate that saw any of the
    first debate would carry the first problem's file name."""
    client = client_for(server)
    thread = client.threads.create()["thread_id"]
    first_problem = "Design a cache for alpha_cache.py"
    second_problem = "Design a queue for beta_queue.py"

    client.runs.wait(thread, graph_id, input={"problem": first_problem}, context=FAKE)
    first = client.threads.get_state(thread)["values"]
    assert first["problem"] == first_problem
    assert [t["id"] for t in first["transcript"]] == ONE_ROUND_IDS
    assert any(
        "alpha_cache.py" in t["content"] for t in first["transcript"]
    )  # the marker does show up
    assert {
        a["context_window"] for a in [*first["settings"]["agents"], first["settings"]["judge"]]
    } == {8192}

    client.runs.wait(
        thread,
        graph_id,
        input={"problem": second_problem},
        context={**FAKE, "context_window": 2048},
    )
    second = client.threads.get_state(thread)["values"]
    transcript = second["transcript"]
    assert second["problem"] == second_problem
    assert second["status"]["problem"] == second_problem
    assert second["status"]["turns"] == len(ONE_ROUND_IDS)
    assert [t["id"] for t in transcript] == ONE_ROUND_IDS  # no turn of the first debate kept
    assert [t["seq"] for t in transcript] == list(range(len(ONE_ROUND_IDS)))
    assert not [t["id"] for t in transcript if "alpha_cache" in t["content"]]
    assert any("beta_queue.py" in t["content"] for t in transcript)
    assert not [s["id"] for s in second["summary_log"] if "alpha_cache" in (s["text"] or "")]
    assert second["solution"] and "alpha_cache" not in json.dumps(second["solution"])

    settings = second["settings"]
    profiles = [*settings["agents"], settings["judge"]]
    assert [a["id"] for a in settings["agents"]] == AGENTS
    assert {a["context_window"] for a in profiles} == {2048}
    assert {a["max_output_tokens"] for a in profiles} == {1024}
    # each prompt fit the smaller window: 2048 minus the 1024 tokens reserved for the answer
    views = [t["view"] for t in transcript if t["view"]]
    assert views and all(v["prompt_tokens"] <= 2048 - 1024 for v in views)


def test_an_unknown_context_key_is_refused_naming_the_nearest_one(
    server: str, graph_id: str
) -> None:
    client = client_for(server)
    thread = client.threads.create()
    context = {**FAKE, "round": 1}  # a typo of "rounds": it must not run a 3-round debate
    try:
        result = client.runs.wait(
            thread["thread_id"], graph_id, input={"problem": "Design a cache"}, context=context
        )
    except Exception as exc:  # the SDK raises the run's error
        text = str(exc)
    else:
        text = json.dumps(result)
    assert "context.round: unknown key" in text and "did you mean 'rounds'" in text
    values = client.threads.get_state(thread["thread_id"])["values"] or {}
    assert not values.get("transcript"), "no debate ran"
