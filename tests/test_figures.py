"""One source of truth for calls, tokens and time: every view of a debate gives the server's own counts.

A real debate on the loopback OpenAI-compatible server is stopped by a provider failure once and resumed;
the live line, the ``-v`` lines, the final line, ``debate list``, the report and the JSON must then all give
the number of requests the server answered and the tokens it reported, and the report must tell the hour
the debate sat stopped from the time it ran.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.cli.progress import CLEAR
from debate_engine.app.reports.figures import timeline
from tests.support.openai_server import OpenAIServer


class Terminal(io.StringIO):
    """stderr as a terminal, so the live line is drawn."""

    def isatty(self) -> bool:
        return True


class Server(OpenAIServer):
    """Fails the debaters' ``fail_at``-th request (404: no client retry) and cuts the judge's first answer."""

    def __init__(self, fail_at: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_at, self.debater_requests, self.judge_cut = fail_at, 0, False

    def _next_fault(self, model: str | None = None) -> str | None:
        if model == "judge-model" and not self.judge_cut:
            self.judge_cut = True
            return "length"  # the judge's first summary is cut and asked again: one summary, two requests
        if model == "test-model":
            self.debater_requests += 1
            if self.debater_requests == self.fail_at:
                return "404"
        return super()._next_fault(model)

    def answered(self) -> int:
        """Count the requests that got a reply (and so usage): a 404 got none and is charged nothing."""
        return sum(
            1
            for r in self.requests
            if r["path"].endswith("/chat/completions") and r["fault"] != "404"
        )


CONFIG = {
    "agents": [
        {"id": "kiss", "role": "kiss", "model": "openai:test-model"},
        {"id": "testing", "role": "testing", "model": "openai:test-model"},
    ],
    "judge": {"id": "judge", "model": "openai:judge-model"},
    # One request at a time, so that no request is in flight when one fails (a cancelled request is answered
    # by the server but never by the debate); a small window, so that the judge summarizes.
    "debate": {"rounds": 2, "contextWindow": 1024, "maxOutputTokens": 128, "maxConcurrency": 1},
}
FAIL_AT = 10
"""The second refinement of round 2: the last call of its phase, after the first one's success."""


def live(text: str) -> list[tuple[int, int]]:
    """Return the calls and tokens of every live line drawn."""
    return [
        (int(c), int(t))
        for c, t in re.findall(r"· calls (\d+)/\d+(?:, \d+ summar(?:y|ies))? · (\d+) tokens", text)
    ]


def call_lines(text: str) -> int:
    """Return the tokens of every ``-v`` line of a call."""
    return sum(
        int(p) + int(c)
        for p, c in re.findall(
            r" done(?: in \d+ requests)?, (\d+) prompt \+ (\d+) completion", text
        )
    )


def spent_lines(text: str) -> list[tuple[int, int]]:
    return [
        (int(c), int(t))
        for c, t in re.findall(r"spent so far: (\d+) model calls?, (\d+) tokens", text)
    ]


def listed(capsys: pytest.CaptureFixture[str], db: str) -> dict[str, str]:
    assert main(["list", "--db", db]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    return dict(zip(header.split("\t"), row.split("\t"), strict=True))


def beside_failed_phase(values: dict[str, Any]) -> int:
    """Tokens of the judge's summary made beside the failed phase (for the synthesis): the live line counts
    its requests at once, its tokens only when the resumed phase charges it."""
    return sum(
        s["usage"]["input_tokens"] + s["usage"]["output_tokens"]
        for s in values["summary_log"]
        if "(made ahead of 2:synthesize)" in s["reason"]
    )


def test_an_interrupted_and_resumed_debate_gives_the_server_s_counts_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = tmp_path / "config.json", str(tmp_path / "d.sqlite")
    config.write_text(json.dumps(CONFIG))
    state, report = tmp_path / "debate.json", tmp_path / "report.md"
    server = Server(FAIL_AT, words=60)
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-figures-0000")
        first = Terminal()
        monkeypatch.setattr(sys, "stderr", first)
        assert (
            main(
                [
                    "run",
                    "--config",
                    str(config),
                    "--thread-id",
                    "fig",
                    "--db",
                    db,
                    "-v",
                    "Design a cache",
                ]
            )
            == 3
        )
        at_stop = (server.answered(), server.usage_total())
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)
        stopped = listed(capsys, db)

        real_time = time.time
        monkeypatch.setattr(time, "time", lambda: real_time() + 3600)  # resumed an hour later
        second = Terminal()
        monkeypatch.setattr(sys, "stderr", second)
        assert (
            main(
                ["resume", "fig", "--db", db, "-v", "--output", str(state), "--report", str(report)]
            )
            == 0
        )
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)
        calls, tokens = server.answered(), server.usage_total()
    capsys.readouterr()
    done = listed(capsys, db)

    # Stopped: the live line had counted every answered request; the step being made when the request failed
    # is charged on resume (its finished call is kept, not asked again), so `debate list` and the last
    # "spent so far" line give what the state had charged, and agree.
    values = json.loads(state.read_text())
    assert live(first.getvalue())[-1] == (at_stop[0], at_stop[1] - beside_failed_phase(values))
    assert "error: the model provider failed" in first.getvalue()
    assert int(stopped["tokens"]) == spent_lines(first.getvalue())[-1][1] < at_stop[1]

    assert any(s["calls"] == 2 for s in values["summary_log"]), "a summary made of two requests"
    assert live(second.getvalue())[-1] == (calls, tokens)
    assert spent_lines(second.getvalue())[-1] == (calls, tokens)
    summaries = sum(
        s["usage"]["input_tokens"] + s["usage"]["output_tokens"] for s in values["summary_log"]
    )
    assert call_lines(first.getvalue() + second.getvalue()) + summaries == tokens, (
        "each call line is exact"
    )
    final = second.getvalue().rsplit(CLEAR, 1)[-1].strip().splitlines()[-1]
    assert re.fullmatch(
        rf"took [\d.]+ s \(and 1 h 00 min stopped\): {calls} model calls, {tokens} tokens .*", final
    )
    assert int(done["tokens"]) == tokens
    spend = values["spend"]["total"]
    assert (spend["calls"], spend["input_tokens"] + spend["output_tokens"]) == (calls, tokens)
    running, stopped_s = timeline(values)
    assert stopped_s > 3590 and running < 60, (
        "the JSON's records tell the hour stopped from the time run"
    )
    rows = dict(re.findall(r"^\| ([a-z ]+) \| (.+) \|$", report.read_text(), re.M))
    assert rows["model calls"].startswith(f"{calls} (") and rows["total tokens"] == str(tokens)
    assert rows["time stopped"].startswith("1 h 00 min") and not rows["time running"].startswith(
        "1 h"
    )


def test_the_rows_by_agent_and_phase_add_up_to_the_spend(debate: Any) -> None:
    from debate_engine.app.reports.figures import figures

    # Every structured answer is invalid: the judge and each summary ask again in prose, two requests each.
    out = debate(
        rounds=2,
        agents="architect,security",
        model="fake:words=200,fail=invalid",
        summary_threshold=1500,
    )
    assert out["summary_log"] and all(len(s["attempts"]) == 2 for s in out["summary_log"])
    f, spend = figures(out), out["spend"]["total"]
    assert (f["total"]["calls"], f["total"]["prompt"], f["total"]["completion"]) == (
        spend["calls"],
        spend["input_tokens"],
        spend["output_tokens"],
    )
    for groups in (f["by_agent"], f["by_phase"]):
        assert sum(g["calls"] for g in groups.values()) == spend["calls"]
        assert (
            sum(g["prompt"] + g["completion"] for g in groups.values())
            == spend["input_tokens"] + spend["output_tokens"]
        )
    assert f["by_phase"][("judge", "synthesis")]["calls"] == 2
    assert (
        f["summary_calls"]
        == 2 * len(out["summary_log"])
        == out["spend"]["by_phase"]["summarize"]["calls"]
    )


def test_calls_that_left_no_record_make_a_row_of_their_own(debate: Any) -> None:
    from debate_engine.app.reports.figures import figures

    out = debate(rounds=1, agents="architect,security")
    total = out["spend"]["total"]
    # as if a clarifying call had asked no question: charged, with no turn to show for it
    extra = {
        **out,
        "spend": {
            **out["spend"],
            "total": {
                **total,
                "calls": total["calls"] + 1,
                "input_tokens": total["input_tokens"] + 40,
            },
        },
    }
    f = figures(extra)
    assert f["by_phase"][("(none)", "without a record")]["calls"] == 1
    assert f["by_phase"][("(none)", "without a record")]["prompt"] == 40
    assert f["total"]["calls"] == total["calls"] + 1
