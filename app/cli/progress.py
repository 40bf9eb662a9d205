"""Progress on stderr from the graph's custom stream events.

By default one line per phase (and a failed summary's warning); ``verbose``
adds each call and each summary as it ends, with what it cost, and after each
step what the debate has spent. When stderr is a terminal, a live line under
them shows the phase, the round (a roundtable's turn), the calls done of the
total (summaries count as they come) and the tokens so far, redrawn in place;
anywhere else nothing extra is written. ``quiet`` writes nothing. A finished
run ends with one line of the whole debate's figures.

A request waiting for its model's rate limit (``calls.limits``: a second or
more) shows on the live line until it ends; a long wait, or with ``verbose``
every one, also gets a line of its own. The limit a run keeps to once the
provider stated its own (``x-ratelimit-*`` headers) is said once, with whose it is.

Every figure comes from the state: each step's ``spend`` event carries the
state's spend, which replaces the running count; between two, a call adds the
requests and usage it is charged for. So the live line, the ``-v`` lines, the
final line, ``debate list`` and the report agree.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from debate_engine.app.reports.figures import cache_phrase, duration, totals
from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.words import counted
from debate_engine.config.settings import HUMAN_PREFIX, is_human
from debate_engine.providers.secrets import redact

CLEAR = "\r\033[K"
"""Back to the line's start and erase it: how the live line is redrawn."""
LONG_WAIT_S = 10.0
"""A rate limit's wait this long gets a line of its own without ``verbose``."""
RATE_EVENTS = ("rate_limit_wait", "rate_limit_adopted")
"""The road's events about rate limits (``calls.limits``)."""


def expected_calls(agents: int, rounds: int, people: int = 0) -> int:
    """Return the debate's model calls without clarifications and summaries.

    ``agents`` proposals; per round ``agents * (agents - 1)`` critiques and ``agents`` refinements; one synthesis.
    ``people`` of the seats are persons, whose turns (a proposal, then ``agents`` a round) are not model calls.
    """
    if agents <= 0:
        return 0
    return agents + rounds * agents * agents + 1 - people * (1 + rounds * agents)


def expected_turn_calls(turns: int, moderated: bool) -> int:
    """Return the roundtable's model calls without summaries.

    One per turn, the moderator's choice before each when it moderates, one synthesis.
    """
    return turns * (2 if moderated else 1) + 1 if turns > 0 else 0


def planned_calls(settings: dict[str, Any], transcript: list[dict[str, Any]] | None = None) -> int:
    """Return a stored debate's model calls without clarifications and summaries, whichever its protocol.

    A roundtable's persons speak when their turn comes: the turns they have taken are taken off.
    """
    agents = settings.get("agents", [])
    if settings.get("protocol") == "roundtable":
        params = settings["roundtable"]
        spoken = sum(
            t["speaker"].startswith(HUMAN_PREFIX)
            for t in transcript or []
            if t["kind"] == "message"
        )
        return expected_turn_calls(params["max_turns"], params["order"] == "moderator") - spoken
    return expected_calls(len(agents), settings.get("rounds", 0), sum(is_human(a) for a in agents))


def summary_line(values: dict[str, Any]) -> str:
    """Return the whole debate's figures, from its state: time running (and stopped, after a resume), calls, tokens,
    and the prompt cache's tokens and saving when the provider reported any.

    The same figures as the report's, however many runs the debate took.
    """
    t = totals(record_of(values))
    stopped = f" (and {duration(t['stopped_s'])} stopped)" if t["stopped_s"] >= 1 else ""
    cache = cache_phrase(t)
    return (
        f"took {duration(t['running_s'])}{stopped}: {counted(t['calls'], 'model call')}, {t['tokens']} tokens "
        f"({t['prompt_tokens']} prompt + {t['completion_tokens']} completion)"
        + (f"; {cache}" if cache else "")
    )


class Progress:
    """Print the lines worth a user's attention; count calls and tokens as they come."""

    def __init__(
        self, quiet: bool = False, verbose: bool = False, stream: TextIO | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet, self.verbose = quiet, verbose
        self.live = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.calls = self.total = self.tokens = self.summaries = 0
        self.phase, self.round, self.rounds = "setup", 0, 0
        self.moderated = self.roundtable = False
        self._drawn = False
        self._gaps: dict[str, int] = {}
        self.waits: dict[str, float] = {}
        """By model, when its rate limit's longest wait under way ends (seconds since the epoch)."""

    def resume(self, values: dict[str, Any]) -> None:
        """Start from a stored debate: the calls it has made (its spend), the calls it has left, its tokens."""
        settings, status = values.get("settings") or {}, values.get("status") or {}
        by_phase = (values.get("spend") or {}).get("by_phase") or {}
        made = totals(record_of(values))
        self.moderated = (settings.get("roundtable") or {}).get("order") == "moderator"
        self.roundtable = settings.get("protocol") == "roundtable"
        self.calls, self.tokens, self.summaries = (
            made["calls"],
            made["tokens"],
            status.get("summaries", 0),
        )
        unplanned = sum(by_phase.get(p, {}).get("calls", 0) for p in ("clarify", "summarize"))
        self.total = (
            max(planned_calls(settings, values.get("transcript")) + unplanned, self.calls)
            if settings
            else 0
        )
        self.phase, self.round, self.rounds = (
            status.get("phase", "setup"),
            status.get("round", 0),
            status.get("rounds", 0),
        )

    def show(self, event: dict[str, Any]) -> None:
        """Take one custom stream event."""
        kind = event.get("event")
        self._count(kind, event)
        if self.quiet:
            return
        line = self._rate_line(kind, event) if kind in RATE_EVENTS else self._line(kind, event)
        if line:
            self._print(line)
        if self.live:
            self._draw()

    def close(self) -> None:
        """Erase the live line (before an error message, a question or the end)."""
        if self._drawn:
            self.stream.write(CLEAR)
            self.stream.flush()
            self._drawn = False

    def finish(self, values: dict[str, Any]) -> None:
        """Print the run's one summary line, unless quiet."""
        self.close()
        if not self.quiet:
            self._print(summary_line(values))

    def _count(self, kind: Any, event: dict[str, Any]) -> None:
        """Count calls as they end; what no one knows in advance (clarifications, summaries) adds to the total."""
        if kind == "debate_started":
            self.rounds = event.get("rounds", 0)
            self.roundtable = roundtable = event.get("protocol") == "roundtable"
            self.total = (
                expected_turn_calls(self.rounds, self.moderated)
                if roundtable
                else expected_calls(
                    len(event.get("agents", [])), self.rounds, event.get("people", 0)
                )
            )
        elif kind == "phase_started":
            self.phase, self.round = event["phase"], event.get("round", self.round)
            self.rounds = event.get("rounds", self.rounds)
        elif kind == "contribution":
            self._contribution(event)
        elif kind == "summarization_completed":
            self.summaries += 1
            self.calls += event.get("calls", 1)
            self.total += event.get("calls", 1)
        elif (
            kind == "spend"
        ):  # a step has been charged: the state's own figures replace the running count
            self.calls, self.tokens = event["calls"], event["tokens"]
            self.total = max(self.total, self.calls)
        elif kind == "rate_limit_wait":
            until = time.time() + float(event.get("seconds", 0))
            self.waits[event["model"]] = max(until, self.waits.get(event["model"], 0.0))
        elif kind in ("budget_stop", "converged", "quality_reached") or (
            kind == "moderation" and event.get("converged")
        ):
            self.total = self.calls + 1  # the judge's synthesis is all that is left

    def _contribution(self, event: dict[str, Any]) -> None:
        """One call ended; a roundtable's turns and the moderator's choices also say where the debate is."""
        requests, prompt, completion = _spent(event)
        if self.roundtable and str(event.get("agent_id", "")).startswith(HUMAN_PREFIX):
            self.total -= (
                1  # a person's turn: no model call, and who speaks when is known only then
            )
        self.calls += requests
        self.tokens += prompt + completion
        self.total += (event.get("kind") in ("clarification", "assessment")) + max(0, requests - 1)
        if event.get("kind") == "moderation" and not self.moderated:
            self.moderated = True  # debate_started does not say the order: the first choice does
            self.total += self.rounds
        if event.get("kind") in ("message", "moderation"):
            self.phase = "turn" if event["kind"] == "message" else "moderate"
            self.round = event.get("round", self.round)

    def _line(self, kind: Any, event: dict[str, Any]) -> str | None:
        where = f"[{'turn' if self.roundtable else 'round'} {event.get('round', '-')}/{event.get('rounds', '-')}]"
        if kind == "debate_started":
            unit = "turn" if event.get("protocol") == "roundtable" else "round"
            return f"agents: {', '.join(event['agents'])}; {counted(event['rounds'], unit)}"
        if kind == "phase_started":
            return f"{where} {event['phase']}"
        if kind == "summarization_error":
            return f"  {event['agent_id']}: summary failed ({event['error']}); going on with the previous one"
        if (
            kind == "contribution"
            and event.get("unseen")
            and self._gaps.get(event["agent_id"]) != event["unseen"][0]
        ):
            self._gaps[event["agent_id"]] = event["unseen"][0]
            first, end = event["unseen"]
            return (
                f"  {event['agent_id']}: transcript positions {first}-{end - 1} fit neither its summary nor its "
                "view (summaries are failing); they stay in the transcript"
            )
        if not self.verbose:
            return None
        if kind == "contribution":
            on = f" on {event['target']}" if event.get("target") else ""
            cut = " (cut at the output limit)" if event.get("truncated") else ""
            requests, prompt, completion = _spent(event)
            tries = f" in {requests} requests" if requests > 1 else ""
            return (
                f"  {event['agent_id']}{on}: {event['kind']} done{tries}, {prompt} prompt + {completion} "
                f"completion tokens, {event.get('latency_ms', 0) / 1000:.1f}s{cut}"
            )
        if kind == "spend":
            return (
                f"  spent so far: {counted(event['calls'], 'model call')}, {event['tokens']} tokens"
            )
        if kind == "summarization_started":
            return f"  {event['agent_id']}: summarizing {counted(event['turns'], 'turn')} ({event['reason']})"
        if kind == "summarization_completed":
            tries = f" in {event['calls']} requests" if event.get("calls", 1) > 1 else ""
            return f"  {event['agent_id']}: summary{tries} {event['tokens_before']} -> {event['tokens_after']} tokens"
        return None

    def _print(self, line: str) -> None:
        self.close()
        print(redact(line), file=self.stream, flush=True)

    def _draw(self) -> None:
        of = f"/{self.total}" if self.total else ""
        summaries = f", {counted(self.summaries, 'summary', 'summaries')}" if self.summaries else ""
        unit = "turn" if self.roundtable else "round"  # a roundtable's turns count as its rounds
        text = (
            f"{self.phase} · {unit} {self.round}/{self.rounds} · calls {self.calls}{of}{summaries} "
            f"· {self.tokens} tokens{self._waiting()}"
        )
        self.stream.write(CLEAR + text)
        self.stream.flush()
        self._drawn = True

    def _rate_line(self, kind: Any, event: dict[str, Any]) -> str | None:
        """Return the line a rate limit's event gets: the limit kept to, always; a wait, when long or verbose."""
        if kind == "rate_limit_adopted":
            return adopted_line(event)
        if self.verbose or event["seconds"] >= LONG_WAIT_S:
            return f"  {event['model']}: waiting {event['seconds']:.1f} s for its rate limit"
        return None

    def _waiting(self) -> str:
        """Return the live line's word on the longest rate-limit wait under way (the line is redrawn only as
        events come, so it names when the wait ends, which stays true)."""
        now = time.time()
        self.waits = {model: until for model, until in self.waits.items() if until > now}
        if not self.waits:
            return ""
        model, until = max(self.waits.items(), key=lambda item: item[1])
        return f" · waiting for {model}'s rate limit until {time.strftime('%H:%M:%S', time.localtime(until))}"


def adopted_line(event: dict[str, Any]) -> str:
    """Return the line that says which limit a run keeps to on a model once its provider stated one, and whose."""
    unit, per = event["unit"], f"per {event['period_s']:g} s"
    if event["source"] == "configured":
        return (
            f"  {event['model']}: keeping to the configured {event['limit']:g} {unit} {per} (the provider "
            f"states {event['read']:g})"
        )
    given = (
        f"stricter than the configured {event['configured']:g}"
        if event.get("configured")
        else "none configured"
    )
    return f"  {event['model']}: keeping to {event['limit']:g} {unit} {per} as the provider states ({given})"


def _spent(event: dict[str, Any]) -> tuple[int, int, int]:
    """Return a call's requests and tokens as charged (``nodes.status.spent``); our own count for an event without them."""
    if "requests" in event:
        return event["requests"], event["input_tokens"], event["output_tokens"]
    return 1, event.get("prompt_tokens", 0), event.get("tokens", 0)
