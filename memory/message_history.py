"""Our memory for anyone's agent: summarize a ``messages`` list safely.

``find_safe_split`` never separates an ``AIMessage``'s tool calls from their
``ToolMessage``s: it pairs them by ``tool_call_id`` across the whole kept
tail, so an answer that comes after another message (a second call, a human
turn) still brings its call along. LangChain's ``SummarizationMiddleware``
(1.5) cuts where we do when every call is followed by its answers, but it
checks only the message at the cut and keeps such a late answer without its
call (its issue #38352); ``tests/test_safe_split.py`` shows where.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    get_buffer_string,
)

from debate_engine.memory.tokens import count_tokens


def find_safe_split(messages: Sequence[AnyMessage], keep_last: int) -> int:
    """Return the index where a tail of about ``keep_last`` messages can begin.

    The tail ``messages[i:]`` holds every ``ToolMessage`` whose call it holds
    and the call of every ``ToolMessage`` it holds; the split moves earlier
    (keeping more) until that is true. 0 means nothing can be cut.
    """
    n = len(messages)
    start = max(0, n - max(keep_last, 0))
    call_index: dict[str, int] = {}
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call.get("id")
                if call_id:
                    call_index[call_id] = i
    while True:
        earliest = start
        for message in messages[start:]:
            if isinstance(message, ToolMessage):
                origin = call_index.get(message.tool_call_id)
                if origin is not None and origin < earliest:
                    earliest = origin
        if earliest == start:
            break
        start = earliest
    return start


def summarize_messages(
    messages: Sequence[AnyMessage],
    model: BaseChatModel,
    *,
    keep_last: int = 6,
    max_tokens: int = 3000,
    instruction: str = "Summarize the conversation so far. Keep identifiers, numbers and decisions verbatim.",
) -> list[AnyMessage]:
    """Replace the head of ``messages`` with one summary when they exceed ``max_tokens``.

    Leading system messages are kept as they are; the tail starts at a safe
    split, so every tool call keeps its answers.
    """
    total = sum(count_tokens(get_buffer_string([m])) for m in messages)
    if total <= max_tokens:
        return list(messages)
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], SystemMessage):
        lead += 1
    body = list(messages[lead:])
    split = find_safe_split(body, keep_last)
    if split == 0:
        return list(messages)
    reply = model.invoke(
        [SystemMessage(instruction), HumanMessage(get_buffer_string(body[:split]))],
        config={"tags": ["nostream", "summarizer"]},
    )
    summary = SystemMessage(f"Summary of the earlier conversation:\n{reply.content}")
    return [*messages[:lead], summary, *body[split:]]


def make_pre_model_hook(model: BaseChatModel, *, keep_last: int = 6, max_tokens: int = 3000) -> Any:
    """Return a ``pre_model_hook`` for LangGraph's prebuilt agents that summarizes what the model sees.

    It returns ``llm_input_messages``, so the thread's ``messages`` stay whole.
    """

    def pre_model_hook(state: dict[str, Any]) -> dict[str, Any]:
        return {
            "llm_input_messages": summarize_messages(
                state["messages"], model, keep_last=keep_last, max_tokens=max_tokens
            )
        }

    return pre_model_hook
