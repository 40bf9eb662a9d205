"""The viewer's pages at ``/ui`` of the real ``langgraph dev``, over the threads its runs made.

A debate is run through the real ``langgraph_sdk`` client (the fake model), as
Studio runs one; the list, the debate, its live part and its memory are then
read at ``/ui`` of the same server, which has no database of its own to give.
"""

from __future__ import annotations

import importlib.util
import json
import re
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from tests.integration import test_server as served
from tests.support.teams import team_file
from tests.test_viewer_actions import text_of

pytestmark = pytest.mark.integration
server = served.server
graph_id = served.graph_id
client_for = served.client_for

SCRIPT = "<script>window.pwned = 1</script>"
PROBLEM = f"Design a cache {SCRIPT}"


@pytest.fixture(scope="module")
def debated(server: str, graph_id: str) -> dict[str, Any]:
    """Return a finished one-round debate's thread id and values, run through the SDK."""
    client = client_for(server)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, graph_id, input={"problem": PROBLEM}, context=served.FAKE)
    values = client.threads.get_state(thread)["values"]
    assert values["status"]["phase"] == "done"
    return {"thread": thread, "values": values}


def page(server: str, path: str, code: int = 200) -> str:
    """Return the text of a page at ``/ui``, checking its status code."""
    got = httpx.get(f"{server}/ui{path}", timeout=30, follow_redirects=True)
    assert got.status_code == code, got.text[:2000]
    return got.text


def test_ui_without_its_slash_leads_to_the_list(server: str, debated: dict[str, Any]) -> None:
    got = httpx.get(f"{server}/ui", timeout=30, follow_redirects=True)
    assert got.status_code == 200 and debated["thread"] in got.text


def test_the_list_shows_the_servers_thread_done(server: str, debated: dict[str, Any]) -> None:
    text = page(server, "/")
    row = re.search(rf'<tr class="row status-(\S+)" data-thread="{debated["thread"]}">', text)
    assert row and row[1] == "done", text[:3000]
    assert "read-only" in text  # the header says why the page has no forms


def test_a_debate_shows_its_turns_and_verdict(server: str, debated: dict[str, Any]) -> None:
    text = page(server, f"/debates/{debated['thread']}")
    assert 'class="verdict"' in text
    assert str(escape(debated["values"]["solution"]["description"])) in text
    for agent in served.AGENTS:
        assert agent in text
    assert str(escape(debated["values"]["transcript"][0]["content"])) in text
    assert f'src="/ui/debates/{debated["thread"]}/positions.svg' in text  # links stay under /ui
    assert '<link rel="stylesheet" href="/ui/static/viewer.css">' in text


def test_model_and_user_text_is_escaped(server: str, debated: dict[str, Any]) -> None:
    for path in ("/", f"/debates/{debated['thread']}"):
        text = page(server, path)
        assert SCRIPT not in text
        assert str(escape(SCRIPT)) in text


def test_the_live_part_memory_and_static_files_are_served(
    server: str, debated: dict[str, Any]
) -> None:
    thread = debated["thread"]
    state = httpx.get(f"{server}/ui/debates/{thread}/state", timeout=30).json()
    assert state["status"] == "done" and state["checkpoint"]
    assert 'class="verdict"' in page(server, f"/debates/{thread}/live")
    page(server, f"/debates/{thread}/memory")
    page(server, "/static/live.js")


def test_unknown_threads_are_404_pages_and_forms_are_refused(server: str) -> None:
    assert "Back to the list" in page(server, "/debates/no-such-thread", 404)
    assert "Back to the list" in page(server, "/debates/00000000-0000-0000-0000-000000000000", 404)
    refused = httpx.post(f"{server}/ui/new", data={"problem": "x"}, timeout=30)
    assert refused.status_code == 403 and "Studio or the SDK" in refused.text


def test_the_servers_own_api_still_answers(server: str, debated: dict[str, Any]) -> None:
    assert httpx.get(f"{server}/ok", timeout=30).status_code == 200
    assert client_for(server).threads.get(debated["thread"])["status"] == "idle"


def mounted_app() -> ModuleType:
    """Load the file ``langgraph.json`` names as ``http.app`` by its path, as the server does."""
    target = json.loads((served.ROOT / "langgraph.json").read_text())["http"]["app"]
    path = served.ROOT / target.rpartition(":")[0]
    spec = importlib.util.spec_from_file_location("user_router_module", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_viewer_that_cannot_start_leaves_the_server_starting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = mounted_app()

    def broken() -> None:
        raise ImportError("no jinja2 here")

    monkeypatch.setattr(module, "read_only_viewer", broken)
    with TestClient(module.app) as client:  # the lifespan, which the server's own wraps, completes
        got = client.get("/ui/")
    assert got.status_code == 503
    assert "could not start (ImportError: no jinja2 here)" in got.text
    assert "the graphs are served as usual" in got.text


def test_a_fast_agents_reply_shows_at_ui_while_the_slow_one_still_works(
    server: str, graph_id: str, tmp_path: Path
) -> None:
    """The pages read the server's checkpointer itself: a finished call's reply shows before its phase ends."""
    # the quick reply takes long enough for the pages to be read before it lands
    team = team_file(
        tmp_path, "fake:latency_ms=60000,structured=false", quick="fake:latency_ms=1500"
    )
    client = client_for(server)
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(
        thread, graph_id, input={"problem": "Pick a queue"}, context={"config_file": str(team)}
    )
    try:
        deadline = time.monotonic() + 60
        shown, versions = "", set()
        # a 404 page until the run's first checkpoint
        while "proposal by quick, landed" not in shown:
            assert time.monotonic() < deadline, shown[:2000]
            time.sleep(0.1)
            state = httpx.get(f"{server}/ui/debates/{thread}/state", timeout=30)
            # what an open page polls: it fetches its live part when this moves
            if state.status_code == 200:
                versions.add(state.json()["checkpoint"])
            shown = text_of(httpx.get(f"{server}/ui/debates/{thread}/live", timeout=30).text)
        assert "At work: slow" in shown
        assert client.threads.get(thread)["status"] == "busy"  # the slow call is still out
        now = httpx.get(f"{server}/ui/debates/{thread}/state", timeout=30).json()["checkpoint"]
        setup = [v for v in versions if v.endswith("+0")]
        assert setup and now not in setup, (versions, now)  # the reply's write moved the version
    finally:
        client.runs.cancel(thread, run["run_id"], wait=True)
