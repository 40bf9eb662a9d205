"""A streamed answer's raw tool-call arguments are kept beside the run's own callbacks, which stay whole."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import RunnableLambda

from debate_engine.calls.parse import unclosed
from debate_engine.calls.streamed import StreamedArguments, listened


def piece(args: str, index: int | None = 0) -> ChatGenerationChunk:
    call = {"name": None, "args": args, "id": None, "index": index}
    return ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[call]))


def test_the_arguments_are_kept_whole_per_call_in_the_order_of_their_index() -> None:
    kept = StreamedArguments()
    for chunk in (
        piece('{"reply": "Use', 1),
        piece('{"a": ', 0),
        piece(' a queue"}', 1),
        piece("4", None),
    ):
        kept.on_llm_new_token("", chunk=chunk)
    kept.on_llm_new_token(
        "text only", chunk=ChatGenerationChunk(message=AIMessageChunk(content="x"))
    )
    kept.on_llm_new_token("no chunk")
    assert kept.raws() == ['{"a": 4', '{"reply": "Use a queue"}']
    assert [unclosed(r) for r in kept.raws()] == [True, False]


class Seen(BaseCallbackHandler):
    def __init__(self) -> None:
        self.started = 0

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        self.started += 1


def test_the_listener_joins_the_callbacks_a_call_inherits_without_replacing_them() -> None:
    run, listener = Seen(), StreamedArguments()
    found: dict[str, Any] = {}

    def inner(x: int) -> int:
        config = listened({"tags": ["t"]}, listener)
        found["callbacks"] = config["callbacks"]
        return x

    RunnableLambda(inner).invoke(1, config={"callbacks": [run]})
    manager = found["callbacks"]
    assert isinstance(manager, CallbackManager)
    assert run in manager.handlers and listener in manager.handlers
    assert listened({}, listener)["callbacks"] == [listener]  # outside any run: the listener alone
