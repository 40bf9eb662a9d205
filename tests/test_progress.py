"""Progress on stderr: phase lines by default, each call with -v, a live line only on a terminal, one summary line.

It is one module because every test here reads the one progress printer.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.app.cli.outputs import _parse_env
from debate_engine.app.cli.progress import CLEAR, Progress, expected_calls, summary_line
from tests.support.openai_server import OpenAIServer


class Terminal(io.StringIO):
    """stderr as a terminal."""

    def isatty(self) -> bool:
        return True


def streamed(
    agents: str, rounds: int, model: str = "fake"
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return the custom events and final values of a real debate."""
    graph = compile_debate()
    config = {"configurable": {"thread_id": "p"}}
    events = list(
        graph.stream(
            {"problem": "Design a cache"},
            config,
            stream_mode="custom",
            context=Context(model=model, agents=agents, rounds=rounds),
        )
    )
    return events, dict(graph.get_state(config).values)


@pytest.fixture(scope="module")
def three_by_two() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return streamed("architect,performance,security", 2)


def feed(progress: Progress, events: list[dict[str, Any]]) -> None:
    for event in events:
        progress.show(event)


def test_expected_calls_by_hand() -> None:
    assert expected_calls(3, 2) == 3 + 2 * (3 * 2 + 3) + 1 == 22
    assert expected_calls(1, 3) == 1 + 3 * 1 + 1 == 5  # one agent: no critiques
    assert expected_calls(2, 1) == 2 + 1 * (2 + 2) + 1 == 7
    assert expected_calls(0, 5) == 0


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agents=st.integers(min_value=1, max_value=3), rounds=st.integers(min_value=1, max_value=3))
def test_expected_calls_is_what_a_debate_makes(agents: int, rounds: int) -> None:
    _, values = streamed(",".join(["architect", "kiss", "testing"][:agents]), rounds)
    assert len(values["transcript"]) == expected_calls(agents, rounds)


def test_by_default_one_line_per_phase_and_nothing_live_off_a_terminal(three_by_two: Any) -> None:
    events, _ = three_by_two
    out = io.StringIO()
    feed(Progress(stream=out), events)
    assert out.getvalue().splitlines() == [
        "agents: architect, performance, security; 2 rounds",
        "[round 1/2] propose",
        "[round 1/2] critique",
        "[round 1/2] refine",
        "[round 2/2] critique",
        "[round 2/2] refine",
        "[round 2/2] synthesize",
    ]
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_verbose_shows_each_call_as_it_ends(three_by_two: Any) -> None:
    events, values = three_by_two
    out = io.StringIO()
    feed(Progress(verbose=True, stream=out), events)
    done = [line for line in out.getvalue().splitlines() if " done, " in line]
    assert len(done) == len(values["transcript"]) == 22
    critiques = [line.strip() for line in done if "critique done" in line]
    assert len(critiques) == 2 * 6 and critiques[0].split(":")[0].split(" on ")[0] in (
        "architect",
        "performance",
        "security",
    )
    spent = [line.strip() for line in out.getvalue().splitlines() if "spent so far" in line]
    total = values["spend"]["total"]
    assert len(spent) == 6, "one line per charged step: propose, 2 x (critique, refine), synthesize"
    assert spent[-1] == (
        f"spent so far: 22 model calls, {total['input_tokens'] + total['output_tokens']} tokens"
    )


def test_a_call_line_shows_what_the_call_was_charged() -> None:
    out = io.StringIO()
    progress = Progress(verbose=True, stream=out)
    progress.show(
        {
            "event": "contribution",
            "kind": "synthesis",
            "round": 2,
            "agent_id": "judge",
            "tokens": 0,
            "prompt_tokens": 900,
            "latency_ms": 1500,
            "requests": 2,
            "input_tokens": 1830,
            "output_tokens": 78,
        }
    )
    assert (
        out.getvalue()
        == "  judge: synthesis done in 2 requests, 1830 prompt + 78 completion tokens, 1.5s\n"
    )
    assert (progress.calls, progress.tokens) == (2, 1908)


def test_on_a_terminal_a_live_line_counts_calls_and_tokens(three_by_two: Any) -> None:
    events, values = three_by_two
    total = values["spend"]["total"]
    screen = Terminal()
    progress = Progress(stream=screen)
    feed(progress, events)
    text = screen.getvalue()
    last = text.rsplit(CLEAR, 1)[1]
    assert (
        last
        == f"synthesize · round 2/2 · calls 22/22 · {total['input_tokens'] + total['output_tokens']} tokens"
    )
    assert re.search(r"critique · round 1/2 · calls \d+/22", text)
    assert "[round 2/2] synthesize\n" in text, "phase lines still print above the live line"
    progress.close()
    assert screen.getvalue().endswith(CLEAR), "the live line is erased at the end"


def test_each_step_s_spend_replaces_the_running_count() -> None:
    progress = Progress(stream=io.StringIO())
    progress.show(
        {
            "event": "contribution",
            "kind": "proposal",
            "agent_id": "a",
            "tokens": 10,
            "prompt_tokens": 90,
        }
    )
    assert (progress.calls, progress.tokens) == (1, 100), (
        "without the charged figures: our own count"
    )
    progress.show({"event": "spend", "calls": 3, "tokens": 450, "cost": 0.0})
    assert (progress.calls, progress.tokens, progress.total) == (3, 450, 3)


def test_quiet_writes_nothing_even_on_a_terminal(three_by_two: Any) -> None:
    events, values = three_by_two
    screen = Terminal()
    progress = Progress(quiet=True, verbose=True, stream=screen)
    feed(progress, events)
    progress.finish(values)
    assert screen.getvalue() == ""


def test_the_summary_line_gives_the_whole_debate_s_spend_and_time(three_by_two: Any) -> None:
    _, values = three_by_two
    total = values["spend"]["total"]
    prompt, completion = total["input_tokens"], total["output_tokens"]
    line = summary_line(values)
    assert re.fullmatch(
        rf"took \d+\.\d s: 22 model calls, {prompt + completion} tokens "
        rf"\({prompt} prompt \+ {completion} completion\)",
        line,
    )
    status = values["status"]
    later = {
        **values,
        "status": {**status, "updated_at": status["updated_at"] + 7200},
        "transcript": [
            *values["transcript"][:-1],
            {
                **values["transcript"][-1],
                "created_at": values["transcript"][-1]["created_at"] + 7200,
            },
        ],
    }
    assert re.fullmatch(
        r"took \d+\.\d s \(and 2 h 00 min stopped\): 22 model calls, .*", summary_line(later)
    )


def test_a_resumed_progress_starts_from_the_stored_spend(three_by_two: Any) -> None:
    _, values = three_by_two
    progress = Progress(stream=io.StringIO())
    spend = {
        "total": {"calls": 6, "input_tokens": 500, "output_tokens": 100, "cost": 0.0},
        "by_agent": {},
        "by_phase": {"summarize": {"calls": 1, "input_tokens": 0, "output_tokens": 0, "cost": 0.0}},
    }
    progress.resume(
        {
            **values,
            "transcript": values["transcript"][:5],
            "summary_log": [],
            "spend": spend,
            "status": {**values["status"], "phase": "propose", "round": 1},
        }
    )
    assert (progress.calls, progress.tokens, progress.total, progress.phase, progress.round) == (
        6,
        600,
        23,
        "propose",
        1,
    )


# --------------------------------------------------------------------------- through the command line


def run(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--agents",
        "kiss,testing",
        "--db",
        str(tmp_path / "d.sqlite"),
        *extra,
        "Design a cache",
    ]


def test_the_run_is_concise_by_default_and_ends_with_one_summary_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s.json"
    assert main(run(tmp_path, "--output", str(out))) == 0
    err = capsys.readouterr().err.splitlines()
    total = json.loads(out.read_text())["spend"]["total"]
    prompt, completion = total["input_tokens"], total["output_tokens"]
    assert [line for line in err if " done, " in line] == []
    assert err[-1].startswith("took ") and err[-1].endswith(
        f": 7 model calls, {prompt + completion} tokens ({prompt} prompt + {completion} completion)"
    )
    assert sum(line.startswith("took ") for line in err) == 1

    assert main(run(tmp_path, "-v")) == 0
    assert len([line for line in capsys.readouterr().err.splitlines() if " done, " in line]) == 7
    assert main(run(tmp_path, "--quiet")) == 0
    assert not any(line.startswith("took ") for line in capsys.readouterr().err.splitlines()), (
        "--quiet: none"
    )


@pytest.mark.parametrize("suffix", [".md", ".txt"])
def test_output_with_a_text_name_writes_the_solution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    text = tmp_path / f"solution{suffix}"
    assert main(run(tmp_path, "--quiet", "--output", str(text))) == 0
    printed = capsys.readouterr().out
    assert text.read_text() == printed, "the file holds the solution the run printed"
    assert printed.strip() and not printed.lstrip().startswith("{")


def test_env_file_keys_reach_the_provider_and_are_never_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the entry point with no key set, as a user runs it: the file gives the key and the server.

    The two are blank rather than unset, so that what the file sets is put back after the test.
    """
    secret = "sk-from-env-file-0123456789"
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.setenv(name, "")
    monkeypatch.delenv("DEBATE_MODEL")
    with OpenAIServer(words=20) as server:
        keys = tmp_path / "keys.env"
        keys.write_text(
            f"# keys\nexport OPENAI_API_KEY='{secret}'\nOPENAI_BASE_URL={server.base_url}\n"
        )
        args = ["run", "--model", "openai:test-model", "--agents", "kiss", "--rounds", "1", "-v"]
        code = main([*args, "--db", str(tmp_path / "d.sqlite"), "--env-file", str(keys), "p"])
        result = capsys.readouterr()
        assert code == 0, result.err
        assert server.requests and all(
            r["headers"]["authorization"] == f"Bearer {secret}" for r in server.requests
        )
    assert secret not in result.out + result.err
    assert main(["run", "--model", "fake", "--env-file", str(tmp_path / "none.env"), "p"]) == 2
    assert "--env-file" in capsys.readouterr().err


def test_a_variable_already_set_wins_over_the_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from debate_engine.app.cli.outputs import load_env_file

    env = tmp_path / "keys.env"
    env.write_text("DEBATE_MODEL=local:smollm2\nDEBATE_TEST_ONLY=yes\n")
    monkeypatch.setenv("DEBATE_TEST_ONLY", "")
    assert load_env_file(str(env)) == ["DEBATE_TEST_ONLY"]
    assert os.environ["DEBATE_MODEL"] == "fake" and os.environ["DEBATE_TEST_ONLY"] == "yes"


def test_the_env_file_is_read_as_python_dotenv_reads_it() -> None:
    text = "# comment\nA=1\nexport B='two words'\nC=\"quoted # not a comment\"\nD=plain # a comment\n\nE=\n"
    expected = {"A": "1", "B": "two words", "C": "quoted # not a comment", "D": "plain", "E": ""}
    assert _parse_env(text) == expected


def test_a_roundtable_announces_turns_not_rounds() -> None:
    from debate_engine import RoundtableContext, compile_roundtable

    events = [
        chunk
        for chunk in compile_roundtable().stream(
            {"problem": "p"},
            {"configurable": {"thread_id": "rt"}},
            stream_mode="custom",
            context=RoundtableContext(model="fake", agents="architect,kiss", turns=3),
        )
    ]
    out = io.StringIO()
    feed(Progress(stream=out), events)
    assert out.getvalue().splitlines()[0] == "agents: architect, kiss; 3 turns"


@pytest.mark.parametrize("order", ["round-robin", "moderator"])
def test_a_roundtable_expects_its_turns_its_moderator_and_its_summaries(
    order: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    screen, out = Terminal(), tmp_path / "rt.json"
    monkeypatch.setattr(sys, "stderr", screen)
    assert (
        main(
            [
                "run",
                "--protocol",
                "roundtable",
                "--turns",
                "7",
                "--order",
                order,
                "--summary-every",
                "2",
                "--agents",
                "kiss,security",
                "--model",
                "fake:words=60",
                "--db",
                str(tmp_path / "d.sqlite"),
                "--output",
                str(out),
                "Design a cache",
            ]
        )
        == 0
    )
    values = json.loads(out.read_text())
    made = values["spend"]["total"][
        "calls"
    ]  # turns, moderator's choices, summaries and the synthesis
    lines = screen.getvalue().split(CLEAR)
    last = next(line for line in reversed(lines) if " · calls " in line).split("\n")[0]
    made_summaries = len(values["summary_log"])
    assert made_summaries and last.startswith(
        f"synthesize · turn {values['status']['round']}/7 · calls {made}/{made}, "
        f"{made_summaries} summar{'y' if made_summaries == 1 else 'ies'}"
    )
    first = next(line for line in lines if " · calls 1/" in line)
    assert first.split(" · ")[2].split(",")[0] == (
        "calls 1/15" if order == "moderator" else "calls 1/8"
    )
    assert f": {made} model calls, " in lines[-1].splitlines()[-1]
