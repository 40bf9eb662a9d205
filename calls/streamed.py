"""What the road keeps of a streamed answer that LangChain's merge of its chunks drops: the raw tool-call arguments.

A request streams when a streaming listener asks (LangGraph's ``messages``
mode: Studio, the viewer's own runs). LangChain then joins the chunks into one
message and parses its tool call's arguments leniently (``parse_partial_json``),
which closes a call cut at the output limit into a valid one (``"answer": "4`` of
``42`` becomes ``"4"``), and drops the raw text. Unstreamed, the same cut call is
an invalid tool call whose raw arguments show the cut. So each request carries a
listener that keeps the streamed raw arguments, and the road judges a cut by them
as it judges an unstreamed one (``calls.parse.looks_cut``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config


class StreamedArguments(BaseCallbackHandler):
    """Keeps the raw arguments of a streamed answer's tool calls, by the call's index."""

    run_inline = True  # called in order as each chunk comes, on the caller's own thread or loop

    def __init__(self) -> None:
        self.pieces: dict[int, list[str]] = {}

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, **kwargs: Any) -> None:
        """Keep the argument pieces a chunk carries."""
        message = getattr(chunk, "message", None)
        for piece in getattr(message, "tool_call_chunks", None) or []:
            self.pieces.setdefault(int(piece.get("index") or 0), []).append(piece.get("args") or "")

    def raws(self) -> list[str]:
        """Return each streamed tool call's arguments, whole as the model wrote them."""
        return ["".join(parts) for _, parts in sorted(self.pieces.items())]


def listened(config: RunnableConfig, listener: BaseCallbackHandler) -> RunnableConfig:
    """Return ``config`` with ``listener`` beside the callbacks the call inherits from its run (LangGraph's
    stream, tracers): passed alone, it would take their place."""
    inherited = ensure_config().get("callbacks")
    if isinstance(inherited, BaseCallbackManager):
        manager = inherited.copy()
        manager.add_handler(listener, inherit=True)
        return {**config, "callbacks": manager}
    return {**config, "callbacks": [*(inherited or []), listener]}
