"""Issue 23's habits: `debate list` newest first, help that shows defaults, a dry run without a key,
``--quiet`` that leaves errors only, the embedded model's start announced, `debate eval` that says which model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.measure.evaluate import Evaluation
from debate_engine.providers import local_server


def debate(db: Path, thread: str, *extra: str) -> None:
    assert (
        main(
            [
                "run",
                "--model",
                "fake",
                "--rounds",
                "1",
                "--agents",
                "kiss,testing",
                "--db",
                str(db),
                "--quiet",
                "--thread-id",
                thread,
                *extra,
                f"problem {thread}",
            ]
        )
        == 0
    )


def listed(capsys: pytest.CaptureFixture[str], db: Path, *flags: str) -> tuple[list[str], str]:
    capsys.readouterr()
    assert main(["list", "--db", str(db), *flags]) == 0
    captured = capsys.readouterr()
    return captured.out.splitlines(), captured.err


def test_debate_list_is_newest_first_limited_and_speaks_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.sqlite"
    for thread in ("b", "c", "a"):  # in time order, not in the order of their ids
        debate(db, thread)
    lines, err = listed(capsys, db)
    assert [line.split("\t")[0] for line in lines] == ["thread", "a", "c", "b"] and err == ""
    lines, err = listed(capsys, db, "--limit", "2")
    assert [line.split("\t")[0] for line in lines[1:]] == ["a", "c"]
    assert err == "the newest 2 of 3 debates; --all shows every one\n"
    lines, err = listed(capsys, db, "--limit", "1", "--all")
    assert len(lines) == 4 and err == ""
    rows = [json.loads(line) for line in listed(capsys, db, "--json")[0]]
    assert [r["thread"] for r in rows] == ["a", "c", "b"]
    assert (
        rows[0]["status"] == "done" and rows[0]["problem"] == "problem a" and rows[0]["turns"] == 7
    )
    assert main(["list", "--db", str(db), "--limit", "0"]) == 2
    assert "--limit 0: show at least 1 debate" in capsys.readouterr().err


def helped(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_shows_the_defaults_the_roles_and_what_thread_means(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = helped(capsys, "run")
    for text in (
        "the config's, else 3",
        "else architect,performance,security",
        "roles: architect, generalist, kiss,",
        "else $DEBATE_MODEL; else openai:gpt-4o-mini when OPENAI_API_KEY is set",
        "else local:smollm2",
        "needs no API key",
        "phases: propose, critique, refine per round (default",
    ):
        assert text in run, text
    for command in ("show", "resume"):
        assert "THREAD the debate's id: what `debate run` prints first" in helped(capsys, command)
    assert "--limit N show the newest N (default 20)" in helped(capsys, "list")
    assert "else the debate's judge model" in helped(capsys, "eval")


def test_the_protocol_is_called_phases_and_phase_is_still_understood(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    debate(tmp_path / "d.sqlite", "p", "--protocol", "phase", "--output", str(out))
    assert (
        json.loads(out.read_text())["settings"]["protocol"] == "phases"
    )  # as the state and the events name it


def test_a_dry_run_needs_no_api_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "d.sqlite"
    assert main(["run", "--model", "openai:gpt-4o-mini", "--dry-run", "--db", str(db), "p"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("phase\tcalls") and "total" in out and not db.exists()
    assert (
        main(["run", "--model", "openai:gpt-4o-mini", "--db", str(db), "p"]) == 2
    )  # a real run needs it
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err


QUIET = textwrap.dedent("""
    import logging, sys, warnings
    from debate_engine.app.cli import main as cli
    from debate_engine.app.cli import run
    from debate_engine.errors import InputError

    def noisy(args):
        logging.getLogger("debate.note").info("starting the embedded model...")
        logging.getLogger("httpx").warning("a transport's warning")
        warnings.warn("a library's deprecation", DeprecationWarning, stacklevel=1)
        if args.problem == "fail":
            raise InputError("--rounds: a named error")
        return 0

    run.main = noisy
    sys.exit(cli.main(sys.argv[1:]))
""")


@pytest.mark.integration  # the logging and warnings of a fresh interpreter are the point
@pytest.mark.parametrize("quiet", [True, False])
def test_quiet_prints_nothing_but_errors(quiet: bool) -> None:
    """A fresh process: the logging set-up and warning filters are those a user's shell gets."""
    env = {**os.environ, "PYTHONWARNINGS": "always"}
    flag = ["--quiet"] if quiet else []
    ok = subprocess.run(
        [sys.executable, "-c", QUIET, "run", *flag, "p"], capture_output=True, text=True, env=env
    )
    failed = subprocess.run(
        [sys.executable, "-c", QUIET, "run", *flag, "fail"], capture_output=True, text=True, env=env
    )
    assert (ok.returncode, failed.returncode) == (0, 2)
    if quiet:
        assert ok.stderr == "" and failed.stderr == "error: --rounds: a named error\n"
    else:
        assert (
            "starting the embedded model...\n" in ok.stderr and "a transport's warning" in ok.stderr
        )
        assert "error: --rounds: a named error" in failed.stderr


def test_the_embedded_models_start_is_announced(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Started:
        def __init__(self, *args: Any) -> None:
            self.process = subprocess.Popen([sys.executable, "-c", ""])

        def wait_ready(self) -> None:
            self.process.wait()

        def stop(self) -> None:
            pass

    monkeypatch.setattr(local_server, "gguf_path", lambda: Path("model.gguf"))
    monkeypatch.setattr(local_server, "LocalServer", Started)
    monkeypatch.setattr(local_server, "_server", None)
    with caplog.at_level("INFO", logger="debate.note"):
        local_server.ensure_server()
    assert [r.getMessage() for r in caplog.records if r.name == "debate.note"] == [
        "starting the embedded model... (SmolLM2 on llama.cpp, about 20 s)"
    ]


SCORES = {name: 10 for name in Evaluation.model_fields if not name.endswith("_justification")}
PROSE = "The design names its limits and measures them with a load test at twice the peak."


@pytest.mark.parametrize(
    "justification",
    ['", overall_scalabilty: 2, "', "good", '"security": 3, "overall": 9', "{ the end }", ""],
)
def test_an_evaluation_whose_justification_is_not_prose_is_rejected(justification: str) -> None:
    """An embedded-model evaluator once scored 10/10 with the justification `", overall_scalabilty: 2, "`."""
    answer = {
        **SCORES,
        **{n: PROSE for n in Evaluation.model_fields if n.endswith("_justification")},
    }
    assert Evaluation.model_validate(answer)
    with pytest.raises(ValueError, match="not a justification"):
        Evaluation.model_validate({**answer, "overall_justification": justification})
    with pytest.raises(ValueError):
        Evaluation.model_validate({**answer, "overall": "10"})  # a string is not a score either


ONE_PLURAL = re.compile(
    r"(?<![\d.])1 (?:turns|rounds|calls|model calls|summary calls|summaries|facts)\b|\w\(s\)"
)


def test_counts_are_words_one_turn_one_summary_call_round_one_after_synthesis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, report = tmp_path / "d.sqlite", tmp_path / "r.md"
    assert (
        main(
            [
                "run",
                "--model",
                "fake",
                "--rounds",
                "1",
                "--agents",
                "kiss,testing",
                "--db",
                str(db),
                "-v",
                "--thread-id",
                "w",
                "--context-window",
                "1024",
                "--max-output-tokens",
                "128",
                "--report",
                str(report),
                "p",
            ]
        )
        == 0
    )
    assert main(["show", "w", "--db", str(db)]) == 0
    assert (
        main(
            [
                "probe",
                "--model",
                "fake",
                "--rounds",
                "2",
                "--facts",
                "1",
                "--plant-rounds",
                "1",
                "--quiet",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    said = captured.err + captured.out + report.read_text()
    assert "saw 1 turn verbatim" in said and "thread w: round 1/1, after synthesis" in said
    assert "# Memory probe: 1 fact planted (briefing) in round 1\n" in said
    for n, call in re.findall(r"(\d+) (summary calls?)\)", said):
        assert call == ("summary call" if n == "1" else "summary calls")
    assert not ONE_PLURAL.search(said), ONE_PLURAL.search(said)
