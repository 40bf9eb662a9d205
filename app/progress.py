"""Live progress on stderr from the graph's custom stream events."""

from __future__ import annotations

import sys
from typing import Any

from debate_engine.providers.secrets import redact


class Progress:
    """Print one line per event worth a user's attention; count tokens as they come."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tokens = 0
        self.calls = 0

    def show(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "contribution":
            self.calls += 1
            self.tokens += event.get("tokens", 0) + event.get("prompt_tokens", 0)
        line = None if self.quiet else self._line(kind, event)
        if line:
            print(redact(line), file=sys.stderr, flush=True)

    def _line(self, kind: Any, event: dict[str, Any]) -> str | None:
        where = f"[round {event.get('round', '-')}/{event.get('rounds', '-')}]"
        if kind == "debate_started":
            return f"agents: {', '.join(event['agents'])}; {event['rounds']} round(s)"
        if kind == "phase_started":
            return f"{where} {event['phase']}"
        if kind == "contribution":
            on = f" on {event['target']}" if event.get("target") else ""
            cut = " (cut at the output limit)" if event.get("truncated") else ""
            return (f"  {event['agent_id']}{on}: {event['kind']} done, {event['tokens']} tokens "
                    f"{event.get('latency_ms', 0) / 1000:.1f}s{cut} (tokens so far {self.tokens})")
        if kind == "summarization_started":
            return f"  {event['agent_id']}: summarizing {event['turns']} turns ({event['reason']})"
        if kind == "summarization_completed":
            return f"  {event['agent_id']}: summary {event['tokens_before']} -> {event['tokens_after']} tokens"
        if kind == "summarization_error":
            return f"  {event['agent_id']}: summary failed ({event['error']}); going on with the previous one"
        return None
