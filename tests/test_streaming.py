"""Streaming: custom progress events, and model tokens tagged with their agent and phase (never the summarizer's)."""

from __future__ import annotations

import asyncio
from typing import Any

from debate_engine import Context, compile_debate

LONG = Context(
    model="fake:words=200", agents="architect,security", rounds=3, summary_threshold=1500
)


PHASE = {
    "proposal": "propose",
    "critique": "critique",
    "refinement": "refine",
    "synthesis": "synthesize",
}
"""Stream metadata names the phase (the node), as ``phase_started`` does."""


def test_custom_events_announce_the_debate_each_phase_and_each_turn() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "c"}}
    events = [
        e
        for e in graph.stream(
            {"problem": "p"},
            config,
            stream_mode="custom",
            context=Context(model="fake", agents="architect,kiss", rounds=2),
        )
    ]
    values = graph.get_state(config).values
    assert events[0] == {
        "event": "debate_started",
        "agents": ["architect", "kiss"],
        "rounds": 2,
        "protocol": "phases",
        "people": 0,
    }
    phases = [
        (e["phase"], e["round"], e["rounds"]) for e in events if e["event"] == "phase_started"
    ]
    assert phases == [
        ("propose", 1, 2),
        ("critique", 1, 2),
        ("refine", 1, 2),
        ("critique", 2, 2),
        ("refine", 2, 2),
        ("synthesize", 2, 2),
    ]
    contributions = [
        (e["kind"], e["round"], e["agent_id"], e["target"])
        for e in events
        if e["event"] == "contribution"
    ]
    # each call is announced as it finishes: within a phase in any order, over the debate one per turn
    assert sorted(contributions, key=str) == sorted(
        ((t["kind"], t["round"], t["speaker"], t["target"]) for t in values["transcript"]), key=str
    )
    assert len(contributions) == 2 + 2 * (2 + 2) + 1
    # each phase is announced before its first contribution
    order = [e["event"] if e["event"] != "phase_started" else e["phase"] for e in events]
    assert order.index("critique") < order.index("contribution", order.index("critique"))


def test_messages_carry_agent_and_phase_and_the_summarizer_stays_silent() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "m"}}
    chunks = list(graph.stream({"problem": "p"}, config, context=LONG, stream_mode="messages"))
    values = graph.get_state(config).values
    assert values["summary_log"], "the debate must summarize for this test to mean anything"
    # the fake streams each reply in pieces of one message, as a real model does: one message per turn
    assert len(chunks) > len(values["transcript"])
    messages = {message.id: meta for message, meta in chunks}
    tagged = [(m.get("agent_id"), m.get("phase"), m.get("round")) for m in messages.values()]
    assert all(agent and phase for agent, phase, _ in tagged), tagged
    # the summary calls (tagged nostream) add none
    assert sorted(tagged, key=str) == sorted(
        [(t["speaker"], PHASE[t["kind"]], t["round"]) for t in values["transcript"]], key=str
    )
    assert not any("summarizer" in (meta.get("tags") or []) for _, meta in chunks)
    assert all(meta["langgraph_node"] != "summary_call" for _, meta in chunks)


def test_summary_events_match_the_summary_log() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "s"}}
    events = list(graph.stream({"problem": "p"}, config, context=LONG, stream_mode="custom"))
    log = graph.get_state(config).values["summary_log"]
    started = [e["agent_id"] for e in events if e["event"] == "summarization_started"]
    completed = [e["agent_id"] for e in events if e["event"] == "summarization_completed"]
    assert sorted(started) == sorted(r["agent_id"] for r in log)
    assert sorted(completed) == sorted(r["agent_id"] for r in log if r["status"] == "ok")


def test_astream_gives_the_same_events_and_messages() -> None:
    context = Context(model="fake", agents="architect,kiss", rounds=1)

    async def main() -> tuple[list[Any], list[Any], dict[str, Any]]:
        graph = compile_debate()
        config = {"configurable": {"thread_id": "a"}}
        custom, messages = [], []
        seen: set[str] = set()
        async for mode, chunk in graph.astream(
            {"problem": "p"}, config, context=context, stream_mode=["custom", "messages"]
        ):
            if mode == "custom":
                custom.append(chunk["event"])
            elif chunk[0].id not in seen:  # a reply streams in pieces of one message
                seen.add(chunk[0].id)
                messages.append((chunk[1]["agent_id"], chunk[1]["phase"]))
        return custom, messages, (await graph.aget_state(config)).values

    custom, messages, values = asyncio.run(main())
    assert custom[0] == "debate_started" and custom.count("phase_started") == 4
    assert custom.count("contribution") == len(values["transcript"]) == 2 + 2 + 2 + 1
    assert sorted(messages) == sorted(
        (t["speaker"], PHASE[t["kind"]]) for t in values["transcript"]
    )
    assert values["solution"] is not None
