"""Streaming and the async API: agents' tokens stream, the summarizer's do not."""

from __future__ import annotations

import asyncio

from debate_engine.graph import Context, compile_debate

LONG = Context(model="fake:words=200", agents="architect,security", rounds=3, summary_threshold=1500)


def test_messages_stream_agents_but_not_the_summarizer() -> None:
    graph = compile_debate()
    config = {"configurable": {"thread_id": "m"}}
    nodes = [
        meta["langgraph_node"]
        for _, meta in graph.stream({"problem": "p"}, config, context=LONG, stream_mode="messages")
    ]
    assert graph.get_state(config).values["summary_log"], "the debate summarized"
    assert {"propose", "critique", "refine", "synthesize"} <= set(nodes)
    assert "summarize" not in nodes


def test_ainvoke_and_astream() -> None:
    async def main() -> tuple[dict, list[str]]:
        graph = compile_debate()
        out = await graph.ainvoke(
            {"problem": "p"}, {"configurable": {"thread_id": "a"}}, context=Context(model="fake", rounds=1)
        )
        events = [
            chunk["event"]
            async for chunk in graph.astream(
                {"problem": "p"},
                {"configurable": {"thread_id": "b"}},
                context=Context(model="fake", rounds=1),
                stream_mode="custom",
            )
        ]
        return out, events

    out, events = asyncio.run(main())
    assert out["solution"] and "contribution" in events and events[0] == "debate_started"
