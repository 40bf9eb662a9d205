"""Look into a debate run on the graph: the kinds of its turns, and every model call it made."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler


def kinds(values: dict[str, Any], round_no: int | None = None) -> Counter[str]:
    return Counter(
        t["kind"] for t in values["transcript"] if round_no is None or t["round"] == round_no
    )


class Prompts(BaseCallbackHandler):
    """Every chat-model call's metadata, user prompt and start/end times (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[Any, dict[str, Any]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any
    ) -> None:
        meta = kwargs.get("metadata") or {}
        with self.lock:
            self.calls[run_id] = {
                "agent_id": meta.get("agent_id"),
                "phase": meta.get("phase"),
                "kind": meta.get("kind"),
                "round": meta.get("round"),
                "tags": kwargs.get("tags") or [],
                "system": str(messages[0][0].content),
                "user": str(messages[0][-1].content),
                "start": time.monotonic(),
                "end": None,
            }

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        with self.lock:
            if run_id in self.calls:
                self.calls[run_id]["end"] = time.monotonic()
