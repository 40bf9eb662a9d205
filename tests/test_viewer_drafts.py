"""A debate this server runs shows each call's text as its model writes it, before the reply lands.

The viewer's runs stream LangGraph's ``messages`` mode: each model call's tokens become a draft on the page (plain
text; a structured reply's prose field read from its tool call's arguments as far as they have come), replaced by
the landed reply when the call ends. A streamed request is charged as the provider bills it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langgraph.checkpoint.memory import InMemorySaver
from markupsafe import escape
from starlette.testclient import TestClient

from debate_engine import Context, compile_debate
from debate_engine.app.viewer import create_app
from debate_engine.app.viewer.drafts import Drafts, task_of
from debate_engine.app.viewer.running import STREAMED
from tests.support.openai_server import serving
from tests.support.teams import run_team, team_file
from tests.support.viewer_debates import SCRIPT
from tests.test_viewer_actions import text_of

NS = "propose:1f2e|model_call:{}"


def chunk(text: str = "", args: str | None = None, id: str = "run-1", last: bool = False) -> Any:
    calls = [{"name": "Contribution" if args == "" else None, "args": args, "index": 0}]
    return AIMessageChunk(
        content=text,
        id=id,
        tool_call_chunks=calls if args is not None else [],
        chunk_position="last" if last else None,
    )


def meta(task: str, agent: str = "kiss", kind: str = "proposal") -> dict[str, Any]:
    return {"langgraph_checkpoint_ns": NS.format(task), "agent_id": agent, "kind": kind}


def test_a_drafts_text_is_its_chunks_and_a_tool_calls_prose_is_read_as_far_as_it_has_come() -> None:
    drafts = Drafts()
    drafts.add("t", chunk("Use a "), meta("a"))
    drafts.add("t", chunk("queue."), meta("a"))
    drafts.add("t", chunk(args=""), meta("b", "testing"))
    drafts.add("t", chunk(args='{"reply": "Shard the'), meta("b", "testing"))
    shown = {d["who"]: d for d in drafts.of("t")}
    assert shown["kiss"]["text"] == "Use a queue." and shown["kiss"]["kind"] == "proposal"
    assert shown["testing"]["text"] == "Shard the" and not shown["testing"]["done"]
    drafts.add("t", chunk(args=' lock.", "position": "shard'), meta("b", "testing"))
    drafts.add("t", chunk(last=True), meta("b", "testing"))
    testing = next(d for d in drafts.of("t") if d["who"] == "testing")
    assert testing["text"] == "Shard the lock." and testing["done"]


def test_arguments_cut_inside_an_escape_keep_the_prose_read_before() -> None:
    drafts = Drafts()
    drafts.add("t", chunk(args='{"reply": "Caf'), meta("a"))
    assert [d["text"] for d in drafts.of("t")] == ["Caf"]  # as a page's poll reads it
    drafts.add(
        "t", chunk(args="\\u00"), meta("a")
    )  # half an escape: the arguments do not parse now
    assert [d["text"] for d in drafts.of("t")] == ["Caf"]
    drafts.add("t", chunk(args="e9 au lait"), meta("a"))
    assert [d["text"] for d in drafts.of("t")] == ["Caf\u00e9 au lait"]


def test_a_tool_call_without_its_prose_yet_shows_no_draft_and_a_retry_starts_the_draft_again() -> (
    None
):
    drafts = Drafts()
    drafts.add("t", chunk(args='{"rea'), meta("a"))
    drafts.add("t", chunk(args='{"position": "x"'), meta("b"))
    assert drafts.of("t") == []
    drafts.add("t", chunk("A first try", id="run-b"), meta("c"))
    # a new message, whatever its id's order
    drafts.add("t", chunk("The retry", id="run-a"), meta("c"))
    assert [d["text"] for d in drafts.of("t")] == ["The retry"]
    drafts.add("t", chunk("The fallback", id="run-c"), meta("c"))
    assert [d["text"] for d in drafts.of("t")] == ["The fallback"]


def test_chunks_of_one_message_grow_one_draft_whatever_objects_their_ids_are() -> None:
    drafts = Drafts()
    for piece in ("One ", "message, ", "many chunks."):
        # a provider's stream parses each chunk's id afresh: equal strings, distinct objects
        drafts.add("t", chunk(piece, id="".join(["chatcmpl-", "42"])), meta("a"))
    assert [d["text"] for d in drafts.of("t")] == ["One message, many chunks."]


def test_a_tool_calls_prose_wins_over_text_written_before_it_and_content_blocks_are_read() -> None:
    drafts = Drafts()
    drafts.add("t", chunk("Let me think. "), meta("a"))
    drafts.add("t", chunk(args='{"rea'), meta("a"))
    assert [d["text"] for d in drafts.of("t")] == ["Let me think. "]  # no prose in the call yet
    drafts.add("t", chunk(args='son": "r", "reply": "Use a queue'), meta("a"))
    assert [d["text"] for d in drafts.of("t")] == ["Use a queue"]  # what the reply will hold
    blocks: Any = [
        {"type": "text", "text": "Shard "},
        {
            "type": "reasoning",
            "reasoning": "hm",
            "text": "private",
        },  # only text blocks are the reply's
        {"type": "thinking", "text": "private"},
        "it.",
    ]
    drafts.add("t", AIMessageChunk(content=blocks, id="run-9"), meta("b", "testing"))
    assert [d["text"] for d in drafts.of("t") if d["who"] == "testing"] == ["Shard it."]


def ended(task: str, name: str = "model_call", **result: Any) -> dict[str, Any]:
    """Return a ``tasks`` stream event of a task's end."""
    reply = {"agent_id": "kiss", "kind": "proposal", "content": "x", **result}
    return {"id": task, "name": name, "error": None, "result": {"__return__": reply}}


NODES = ("propose", "critique", "summarize")


def test_an_answered_calls_draft_stays_done_a_failed_ones_goes_and_a_nodes_end_clears_them() -> (
    None
):
    drafts = Drafts()
    for task, who in (("a", "kiss"), ("b", "testing"), ("c", "security")):
        drafts.add("t", chunk(f"{who} writes", id=f"run-{task}"), meta(task, who))
    drafts.add("u", chunk("other thread"), meta("z"))
    assert [d["text"] for d in drafts.of("t", landed=["a"])] == [
        "testing writes",
        "security writes",
    ]
    drafts.take(
        "t", "tasks", {"id": "a", "name": "model_call", "input": None, "triggers": []}, NODES
    )
    assert not any(d["done"] for d in drafts.of("t"))  # a task starting changes nothing
    drafts.take("t", "tasks", ended("a"), NODES)
    drafts.take("t", "tasks", ended("b", failed=True), NODES)  # a failed call: no reply will land
    drafts.take("t", "tasks", {"id": "c", "name": "model_call", "error": "boom"}, NODES)
    assert [(d["who"], d["done"]) for d in drafts.of("t")] == [("kiss", True)]
    drafts.take("t", "tasks", ended("s", "summary_call"), NODES)  # a summary beside the calls
    assert len(drafts.of("t")) == 1
    drafts.take("t", "updates", {"model_call": {}}, NODES)
    assert len(drafts.of("t")) == 1
    drafts.take("t", "tasks", ended("p", "propose"), NODES)  # the phase wrote its turns
    assert drafts.of("t") == [] and len(drafts.of("u")) == 1
    drafts.take("u", "updates", {"__interrupt__": ()}, NODES)  # a person is asked
    assert drafts.of("u") == []


def streamed(graph: Any, context: Any, seen: Any) -> None:
    """Run a debate streaming as the viewer's runs do, feeding its drafts; ``seen(drafts)`` after each event."""
    drafts = Drafts()

    async def run() -> None:
        config: Any = {"configurable": {"thread_id": "t"}}
        problem = {"problem": "Pick a queue"}
        async for mode, event in graph.astream(
            problem, config, context=context, stream_mode=STREAMED
        ):
            drafts.take("t", mode, event, graph.nodes)
            seen(drafts)

    asyncio.run(run())


def test_a_summary_ending_mid_phase_leaves_every_draft_whole() -> None:
    """Summaries run as tasks beside a phase's calls: their end must not cut a draft back to its tail."""
    graph = compile_debate(checkpointer=InMemorySaver())
    context = Context(
        model="fake:words=200,latency_ms=200",
        agents="architect,security",
        rounds=3,
        summary_threshold=1500,
    )
    texts: dict[str, list[str]] = {}

    def seen(drafts: Drafts) -> None:
        for d in drafts.of("t"):
            if texts.setdefault(d["task"], [d["text"]])[-1] != d["text"]:
                texts[d["task"]].append(d["text"])

    streamed(graph, context, seen)
    values = graph.get_state({"configurable": {"thread_id": "t"}}).values
    assert values["summary_log"], "the debate must summarize for this test to mean anything"
    assert len(texts) >= 10 and sum(len(t) > 1 for t in texts.values()) >= 10
    for task, grown in texts.items():
        assert all(b.startswith(a) for a, b in zip(grown, grown[1:], strict=False)), (task, grown)


def test_a_model_called_outside_a_task_makes_no_draft_and_a_long_draft_shows_its_end() -> None:
    drafts = Drafts()
    drafts.add("t", chunk("node's own call"), {"langgraph_checkpoint_ns": "synthesize:9a"})
    assert drafts.of("t") == []
    assert task_of("propose:1|model_call:abc") == ("model_call", "abc")
    drafts.add("t", chunk("x" * 30_000 + "END"), meta("a"))
    (long,) = drafts.of("t")
    assert long["text"].endswith("END") and len(long["text"]) == 20_000


@pytest.fixture
def team(tmp_path: Path) -> Path:
    """Write a team of a fast agent and one that writes its reply over four seconds (half its latency)."""
    return team_file(tmp_path, "fake:latency_ms=8000,words=120")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(tmp_path / "debates.sqlite"))) as client:
        yield client


def test_a_slow_agents_proposal_shows_as_it_is_written_then_as_it_landed(
    client: TestClient, team: Path
) -> None:
    run_team(client, team)
    seen: list[str] = []
    drawn = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = client.get("/debates/t/state")
        state = (
            answer.json() if answer.status_code == 200 else {}
        )  # 404 until the debate is taken in
        slow = [
            d["text"]
            for d in state.get("drafts", [])
            if (d["who"], d["kind"]) == ("slow", "proposal")
        ]
        if slow and (not seen or slow[0] != seen[-1]):
            seen.append(slow[0])
            live = text_of(client.get("/debates/t/live").text)
            if "Working now: propose" in live and "At work: slow" in live:  # the page draws it too
                drawn += 1
                assert "proposal by slow, being written" in live
        if seen and state.get("turns", 0) >= 2:  # both proposals are in the transcript
            break
        time.sleep(0.05)
    store: Any = client.app.state.store  # type: ignore[attr-defined]
    loaded = client.portal.call(store.load, "t")  # type: ignore[union-attr]
    turns = loaded.values["transcript"]
    landed = next(t["content"] for t in turns if (t["speaker"], t["kind"]) == ("slow", "proposal"))
    assert len(seen) >= 3 and drawn >= 1, (
        seen
    )  # it grew piece by piece, each seen before the reply landed
    assert all(len(a) < len(b) for a, b in zip(seen, seen[1:], strict=False))
    assert landed.startswith(seen[0]) and len(seen[0]) < len(landed)
    assert "proposal by slow, being written" not in text_of(client.get("/debates/t/live").text)


def test_a_streamed_structured_reply_drafts_its_prose_and_is_charged_as_billed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Against the loopback OpenAI server, whose tool-call arguments stream in pieces as the real API's do."""
    with serving(monkeypatch, words=30) as server:
        graph = compile_debate(checkpointer=InMemorySaver())
        context = Context(model="openai:gpt-4o-mini", rounds=1, agents="kiss,testing")
        prose: dict[tuple[str, str], str] = {}
        streamed(
            graph,
            context,
            lambda drafts: prose.update({(d["who"], d["kind"]): d["text"] for d in drafts.of("t")}),
        )
        values = graph.get_state({"configurable": {"thread_id": "t"}}).values
        bodies = [r["body"] for r in server.requests if isinstance(r.get("body"), dict)]
        assert bodies and all(b.get("stream") for b in bodies)
        assert all((b.get("stream_options") or {}).get("include_usage") for b in bodies)
    turns = {(t["speaker"], t["kind"]): t["content"] for t in values["transcript"]}
    for key in [("kiss", "proposal"), ("testing", "refinement")]:
        assert prose[key] == turns[key], key  # the draft's last text is the reply's prose, whole
    total = values["spend"]["total"]
    assert total["input_tokens"] + total["output_tokens"] == server.usage_total()


def test_a_draft_holding_markup_is_drawn_as_text(client: TestClient, team: Path) -> None:
    """A model may write anything: the page escapes a draft (the script draws it with ``textContent``)."""
    runs = run_team(client, team)
    planted = chunk(SCRIPT, id="planted")
    deadline = time.monotonic() + 60
    while "At work: slow" not in text_of(live := client.get("/debates/t/live").text):
        assert time.monotonic() < deadline, live[:1000]
        time.sleep(0.05)
    runs.drafts.add("t", planted, meta("planted", "slow"))
    live = client.get("/debates/t/live").text
    assert SCRIPT not in live and str(escape(SCRIPT)) in live
    state = client.get("/debates/t/state").json()
    assert SCRIPT in [d["text"] for d in state["drafts"]]  # JSON, read by the script as text
    client.portal.call(runs.stop, "t")  # type: ignore[union-attr]
