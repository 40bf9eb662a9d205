"""``max_concurrency`` is the most requests open at the server, on every path, with deadlines firing.

A model that never answers, a fallback that does, a 1-second deadline and a limit of one: under ``invoke`` a
request abandoned at its deadline stayed open at the server while its slot went to the next request (4-5 open
at once were seen). The loopback server counts a request open until the client hangs up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate_engine import Context
from debate_engine.graph.builder import compile_debate
from tests.support.openai_server import OpenAIServer, serving


def config(tmp_path: Path) -> str:
    agent = {
        "model": "openai:hang-model",
        "fallbackModels": ["openai:test-model"],
        "maxOutputTokens": 64,
    }
    path = tmp_path / "debate.json"
    path.write_text(
        json.dumps(
            {
                "agents": [
                    {"id": "architect", "role": "architect", **agent},
                    {"id": "security", "role": "security", **agent},
                ],
                "judge": {"id": "judge", "role": "judge", "model": "openai:test-model"},
            }
        )
    )
    return str(path)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    with serving(monkeypatch, words=20) as srv:
        srv.model_always["hang-model"] = "hang"
        srv.hang_s = 20
        yield srv


def run(tmp_path: Path, sync: bool) -> dict:
    context = Context(
        config_file=config(tmp_path), rounds=1, timeout_s=1, max_concurrency=1, summarize=False
    )
    graph, cfg = compile_debate(), {"configurable": {"thread_id": "t"}}
    if sync:
        return graph.invoke({"problem": "Design a cache"}, cfg, context=context)
    import asyncio

    return asyncio.run(graph.ainvoke({"problem": "Design a cache"}, cfg, context=context))


@pytest.mark.parametrize("sync", [True, False], ids=["invoke", "ainvoke"])
def test_requests_open_at_the_server_never_pass_the_limit(
    server: OpenAIServer, tmp_path: Path, sync: bool
) -> None:
    values = run(tmp_path, sync)
    assert values["solution"], "the fallback answered every call"
    hung = [r for r in server.requests if (r["body"] or {}).get("model") == "hang-model"]
    assert hung, "the deadline fired"
    assert server.peak_in_flight == 1
