"""Tool-call integrity: a kept tail never splits a call from its answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from debate_engine.memory import find_safe_split, make_pre_model_hook, summarize_messages
from debate_engine.providers.fake import FakeChatModel


def ai(*calls: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": c} for c in calls])


def tool(call: str) -> ToolMessage:
    return ToolMessage("result", tool_call_id=call)


def assert_intact(messages, start) -> None:
    tail = messages[start:]
    calls_in_tail = {c["id"] for m in tail if isinstance(m, AIMessage) for c in m.tool_calls}
    answers_in_tail = {m.tool_call_id for m in tail if isinstance(m, ToolMessage)}
    calls_in_head = {c["id"] for m in messages[:start] if isinstance(m, AIMessage) for c in m.tool_calls}
    assert answers_in_tail <= calls_in_tail | (answers_in_tail - calls_in_head), "an answer lost its call"
    assert not (calls_in_head & answers_in_tail), "a call was cut from its answer"


def test_the_shape_that_breaks_summarization_middleware() -> None:
    # LangChain issue #38352: keep=3 leaves Tool(c1) without AI(call c1).
    messages = [HumanMessage("q"), ai("c1"), HumanMessage("more"), ai("c2"), tool("c1"), tool("c2"), AIMessage("done")]
    start = find_safe_split(messages, 3)
    assert start == 1
    assert_intact(messages, start)


def test_the_parallel_call_shape_that_breaks_langmem() -> None:
    # langmem issue #126: the second ToolMessage of a parallel pair was orphaned.
    messages = [HumanMessage("q"), ai("a", "b"), tool("a"), tool("b"), AIMessage("answer"), HumanMessage("next")]
    for keep in range(len(messages) + 1):
        start = find_safe_split(messages, keep)
        assert_intact(messages, start)
    assert find_safe_split(messages, 3) == 1


def test_plain_conversations_split_where_asked() -> None:
    messages = [HumanMessage(str(i)) for i in range(10)]
    assert find_safe_split(messages, 4) == 6
    assert find_safe_split(messages, 0) == 10
    assert find_safe_split(messages, 20) == 0


@st.composite
def conversations(draw):
    messages, pending, n = [], [], 0
    for _ in range(draw(st.integers(1, 25))):
        choice = draw(st.sampled_from(["human", "ai", "call", "answer"]))
        if choice == "human":
            messages.append(HumanMessage("h"))
        elif choice == "ai":
            messages.append(AIMessage("a"))
        elif choice == "call":
            ids = [f"c{n + i}" for i in range(draw(st.integers(1, 3)))]
            n += len(ids)
            messages.append(ai(*ids))
            pending.extend(ids)
        elif pending:
            messages.append(tool(pending.pop(draw(st.integers(0, len(pending) - 1)))))
    return messages


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(0, 30))
def test_no_split_ever_separates_a_call_from_its_answers(messages, keep) -> None:
    start = find_safe_split(messages, keep)
    assert 0 <= start <= len(messages)
    assert start <= max(0, len(messages) - keep) or keep == 0
    assert_intact(messages, start)


def intact(messages, start) -> bool:
    """No answer in ``messages[start:]`` whose call is in ``messages[:start]``."""
    calls_in_head = {c["id"] for m in messages[:start] if isinstance(m, AIMessage) for c in m.tool_calls}
    return not any(isinstance(m, ToolMessage) and m.tool_call_id in calls_in_head for m in messages[start:])


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(0, 30))
def test_the_split_keeps_no_more_than_it_must(messages, keep) -> None:
    # Brute force: the latest start at or before len - keep whose tail is intact.
    latest = max(i for i in range(max(0, len(messages) - keep) + 1) if intact(messages, i))
    assert find_safe_split(messages, keep) == latest


def test_summarize_messages_keeps_system_and_pairs() -> None:
    long = "word " * 400
    messages = [
        SystemMessage("sys"),
        HumanMessage(long),
        ai("c1"),
        HumanMessage(long),
        ai("c2"),
        tool("c1"),
        tool("c2"),
        AIMessage("ok"),
    ]
    out = summarize_messages(messages, FakeChatModel(words=20), keep_last=3, max_tokens=200)
    assert out[0].content == "sys"
    assert out[1].content.startswith("Summary of the earlier conversation")
    assert_intact(out, 2)
    assert isinstance(out[2], AIMessage) and out[2].tool_calls[0]["id"] == "c1"
    assert out[2:] == messages[2:], "the tail from the call of c1 on is kept as it was"


def test_summarize_messages_leaves_short_histories_alone() -> None:
    model = FakeChatModel()
    messages = [SystemMessage("sys"), HumanMessage("hi"), AIMessage("hello")]
    assert summarize_messages(messages, model, keep_last=1, max_tokens=10_000) == messages
    assert model.calls == 0


def test_pre_model_hook_leaves_short_histories_alone() -> None:
    hook = make_pre_model_hook(FakeChatModel(), keep_last=2, max_tokens=10_000)
    messages = [HumanMessage("hi"), AIMessage("hello")]
    assert hook({"messages": messages}) == {"llm_input_messages": messages}


def test_pre_model_hook_summarizes_long_histories_for_the_model_only() -> None:
    model = FakeChatModel(words=10)
    hook = make_pre_model_hook(model, keep_last=2, max_tokens=100)
    messages = [HumanMessage("word " * 300), AIMessage("answer " * 50), HumanMessage("next"), AIMessage("ok")]
    state = {"messages": list(messages)}
    out = hook(state)["llm_input_messages"]
    assert model.calls == 1 and len(out) == 3
    assert out[0].content.startswith("Summary of the earlier conversation") and out[1:] == messages[2:]
    assert state["messages"] == messages, "the thread's messages stay whole"
