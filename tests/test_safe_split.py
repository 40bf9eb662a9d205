"""Tool-call integrity: a kept tail never splits a call from its answers.

The tail is compared with what LangChain's own ``SummarizationMiddleware``
keeps of the same messages, to show where the two differ and that ours is
the one that never keeps an answer without its call.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.prebuilt import create_react_agent
from langgraph.runtime import Runtime

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
    calls_in_head = {
        c["id"] for m in messages[:start] if isinstance(m, AIMessage) for c in m.tool_calls
    }
    assert answers_in_tail <= calls_in_tail | (answers_in_tail - calls_in_head), (
        "an answer lost its call"
    )
    assert not (calls_in_head & answers_in_tail), "a call was cut from its answer"


def test_the_shape_that_breaks_summarization_middleware() -> None:
    # LangChain issue #38352: keep=3 leaves Tool(c1) without AI(call c1).
    messages = [
        HumanMessage("q"),
        ai("c1"),
        HumanMessage("more"),
        ai("c2"),
        tool("c1"),
        tool("c2"),
        AIMessage("done"),
    ]
    start = find_safe_split(messages, 3)
    assert start == 1
    assert_intact(messages, start)


def test_the_parallel_call_shape_that_breaks_langmem() -> None:
    # langmem issue #126: the second ToolMessage of a parallel pair was orphaned.
    messages = [
        HumanMessage("q"),
        ai("a", "b"),
        tool("a"),
        tool("b"),
        AIMessage("answer"),
        HumanMessage("next"),
    ]
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
    calls_in_head = {
        c["id"] for m in messages[:start] if isinstance(m, AIMessage) for c in m.tool_calls
    }
    return not any(
        isinstance(m, ToolMessage) and m.tool_call_id in calls_in_head for m in messages[start:]
    )


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
    messages = [
        HumanMessage("word " * 300),
        AIMessage("answer " * 50),
        HumanMessage("next"),
        AIMessage("ok"),
    ]
    state = {"messages": list(messages)}
    out = hook(state)["llm_input_messages"]
    assert model.calls == 1 and len(out) == 3
    assert (
        out[0].content.startswith("Summary of the earlier conversation") and out[1:] == messages[2:]
    )
    assert state["messages"] == messages, "the thread's messages stay whole"


def label(message: BaseMessage) -> str:
    if isinstance(message, ToolMessage):
        return f"Tool({message.tool_call_id})"
    if isinstance(message, AIMessage) and message.tool_calls:
        return f"AI({','.join(c['id'] for c in message.tool_calls)})"
    return type(message).__name__.removesuffix("Message")


def middleware_tail(messages, keep: int) -> list[BaseMessage]:
    """Run the real middleware, told to summarize, and return what it keeps after its summary."""
    middleware = SummarizationMiddleware(
        FakeChatModel(words=5), trigger=("messages", 1), keep=("messages", keep)
    )
    update = middleware.before_model({"messages": list(messages)}, Runtime())
    if update is None:
        return list(messages)
    _remove_all, summary, *tail = update["messages"]
    assert summary.content.startswith("Here is a summary of the conversation to date")
    return tail


def orphans(tail) -> set[str]:
    """Answers in ``tail`` whose call is not in it: a provider rejects them."""
    calls = {c["id"] for m in tail if isinstance(m, AIMessage) for c in m.tool_calls}
    return {m.tool_call_id for m in tail if isinstance(m, ToolMessage)} - calls


ISSUE_SHAPE = [
    HumanMessage("q"),
    ai("c1"),
    HumanMessage("more"),
    ai("c2"),
    tool("c1"),
    tool("c2"),
    AIMessage("done"),
]


def test_the_middleware_orphans_an_answer_that_ours_keeps_with_its_call() -> None:
    # The cut lands on Tool(c1); the middleware walks back to the first AIMessage
    # sharing any id with the run of answers (AI(c2)) and stops there.
    kept = middleware_tail(ISSUE_SHAPE, 3)
    assert [label(m) for m in kept] == ["AI(c2)", "Tool(c1)", "Tool(c2)", "AI"]
    assert orphans(kept) == {"c1"}
    ours = ISSUE_SHAPE[find_safe_split(ISSUE_SHAPE, 3) :]
    assert [label(m) for m in ours] == ["AI(c1)", "Human", "AI(c2)", "Tool(c1)", "Tool(c2)", "AI"]
    assert orphans(ours) == set()


def test_the_middleware_orphans_when_the_cut_lands_between_two_calls() -> None:
    # The cut lands on AI(c2), not on a ToolMessage, so the middleware keeps it as
    # it is; fixing the walk back from a ToolMessage (langchain #38352) would not help.
    messages = [HumanMessage("q"), ai("c1"), ai("c2"), tool("c1"), tool("c2")]
    kept = middleware_tail(messages, 3)
    assert [label(m) for m in kept] == ["AI(c2)", "Tool(c1)", "Tool(c2)"]
    assert orphans(kept) == {"c1"}
    assert [label(m) for m in messages[find_safe_split(messages, 3) :]] == [
        "AI(c1)",
        "AI(c2)",
        "Tool(c1)",
        "Tool(c2)",
    ]


def test_parallel_calls_are_kept_whole_by_both() -> None:
    messages = [
        HumanMessage("q"),
        ai("a", "b"),
        tool("a"),
        tool("b"),
        AIMessage("answer"),
        HumanMessage("next"),
    ]
    for keep in range(1, len(messages) + 1):
        kept = middleware_tail(messages, keep)
        assert kept == messages[find_safe_split(messages, keep) :], keep
        assert orphans(kept) == set()
    assert [label(m) for m in middleware_tail(messages, 3)] == [
        "AI(a,b)",
        "Tool(a)",
        "Tool(b)",
        "AI",
        "Human",
    ]


class RecordingModel(GenericFakeChatModel):
    """Remember what the agent's model was shown."""

    seen: list = []

    def _generate(self, messages, *args, **kwargs):
        self.seen.append(messages)
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_what_each_agent_model_is_shown() -> None:
    history = [*ISSUE_SHAPE, HumanMessage("go on")]
    theirs = RecordingModel(messages=iter([AIMessage("fine")]), seen=[])
    middleware = SummarizationMiddleware(
        FakeChatModel(words=5), trigger=("messages", 1), keep=("messages", 4)
    )
    create_agent(theirs, tools=[], middleware=[middleware]).invoke({"messages": list(history)})
    assert [label(m) for m in theirs.seen[0]] == [
        "Human",
        "AI(c2)",
        "Tool(c1)",
        "Tool(c2)",
        "AI",
        "Human",
    ]
    ours = RecordingModel(messages=iter([AIMessage("fine")]), seen=[])
    hook = make_pre_model_hook(FakeChatModel(words=5), keep_last=4, max_tokens=1)
    create_react_agent(ours, tools=[], pre_model_hook=hook).invoke({"messages": list(history)})
    shown = [label(m) for m in ours.seen[0]]
    assert shown == ["System", "AI(c1)", "Human", "AI(c2)", "Tool(c1)", "Tool(c2)", "AI", "Human"]


@st.composite
def agent_loops(draw):
    """Histories an agent loop writes: every call's answers right after it."""
    messages, n = [], 0
    for _ in range(draw(st.integers(1, 5))):
        messages.append(HumanMessage("h"))
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{n + i}" for i in range(draw(st.integers(1, 3)))]
            n += len(ids)
            messages.append(ai(*ids))
            messages.extend(tool(c) for c in draw(st.permutations(ids)))
        messages.append(AIMessage("a"))
    return messages


@settings(max_examples=200, deadline=None)
@given(agent_loops(), st.integers(1, 30))
def test_on_agent_loop_histories_the_middleware_cuts_where_we_do(messages, keep) -> None:
    kept = middleware_tail(messages, keep)
    assert kept == messages[find_safe_split(messages, keep) :]
    assert orphans(kept) == set()


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(1, 30))
def test_where_the_middleware_differs_it_orphans_an_answer(messages, keep) -> None:
    kept = middleware_tail(messages, keep)
    theirs, ours = len(messages) - len(kept), find_safe_split(messages, keep)
    head_answers = {m.tool_call_id for m in messages[:theirs] if isinstance(m, ToolMessage)}
    assert not head_answers & {
        c["id"] for m in kept if isinstance(m, AIMessage) for c in m.tool_calls
    }, "a call lost"
    assert ours <= theirs, "ours never keeps less"
    assert ours == theirs or orphans(kept), "ours keeps more only to save an answer"
