"""Issue 23's last bad inputs: each exits 2 with a message that names it, no traceback, before any model call.

"Before any model call" is checked by what a started debate leaves: `debate run` opens its database and
prints `debate THREAD` before its first call, so neither the database file nor that line may exist.
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from debate_engine.config.context import Context
from debate_engine.config.resolve import ConfigError, check_context, resolve

LONG = "x" * 100_000


def nested(depth: int) -> str:
    """Return a config whose summarization settings are a list nested ``depth`` deep, as JSON text."""
    return '{"debate": {"summarization": ' + "[" * depth + "1" + "]" * depth + "}}"


def config_file(text: str | dict[str, Any]) -> Callable[[Path], list[str]]:
    """``--config`` with a file holding ``text`` (JSON text, or an object to dump)."""

    def args(folder: Path) -> list[str]:
        path = folder / "c.json"
        path.write_text(text if isinstance(text, str) else json.dumps(text))
        return ["--config", str(path)]

    return args


def flags(*given: str) -> Callable[[Path], list[str]]:
    return lambda folder: [g.replace("@", str(folder)) for g in given]


BAD_INPUTS: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("a value nested 1,500 deep", config_file(nested(1500)), "nested too deep"),
    ("--agents ,", flags("--agents", ","), "agents: ',' names no agent"),
    ("--agents ' '", flags("--agents", " "), "agents: ' ' names no agent"),
    ("--agents ,,", flags("--agents", ",,"), "agents: ',,' names no agent"),
    ("--report under a file", flags("--report", "@/afile/r.md"), "is a file, not a folder"),
    (
        "--output /dev/full",
        flags("--output", "/dev/full"),
        "--output '/dev/full' cannot be written (No space left",
    ),
    (
        "threshold: true",
        config_file(
            {"debate": {"terminationCondition": {"type": "convergence", "threshold": True}}}
        ),
        "debate.terminationCondition.threshold: true is not a number",
    ),
    (
        "summarization threshold: true",
        config_file({"debate": {"summarization": {"threshold": True}}}),
        "debate.summarization.threshold: true is not a whole number",
    ),
    ("--config ''", flags("--config", ""), "--config '': the path is empty"),
    ('"agents": []', config_file({"agents": []}), "agents: the list is empty"),
    (
        "judge.role not a role",
        config_file({"judge": {"role": "wizard"}}),
        "judge.role: 'wizard' is not a role",
    ),
    (
        "a 100,000-character key",
        config_file({"agents": [{"role": "kiss", LONG: 1}]}),
        "agents[0]: unknown key 'xxx",
    ),
    (
        "a 100,000-character value",
        config_file({"agents": [{"role": LONG}]}),
        "agents[0].role: 'xxx",
    ),
    ("a 100,000-character --agents", flags("--agents", LONG), "agents: 'xxx"),
    ("a 100,000-character --config", flags("--config", LONG), "config file xxx"),
    ("a 100,000-character --db", flags("--db", f"{LONG}/d.sqlite"), "--db: cannot use xxx"),
]


@pytest.mark.parametrize(("case", "args", "message"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_a_bad_input_exits_2_naming_it_before_any_model_call(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    args: Callable[[Path], list[str]],
    message: str,
) -> None:
    db = tmp_path / "d.sqlite"
    (tmp_path / "afile").write_text("a file, not a folder")
    code = main(
        [
            "run",
            "--model",
            "fake",
            "--rounds",
            "1",
            "--db",
            str(db),
            "--thread-id",
            "never",
            *args(tmp_path),
            "p",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, (case, err)
    assert err.startswith("error:") and message in err, err
    assert "Traceback" not in err and "debate never" not in err
    assert not db.exists(), "a debate was started"
    assert max(len(line) for line in err.splitlines()) < 400, "a long value was quoted whole"
    assert LONG not in err


def test_a_value_nested_below_the_parsers_limit_is_named_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--model", "fake", *config_file(nested(900))(tmp_path), "p"]) == 2
    err = capsys.readouterr().err
    assert "debate.summarization" in err and "Traceback" not in err and len(err) < 400


@pytest.mark.parametrize("agents", [",", " ", ",,", " , "])
def test_a_run_context_naming_no_agent_is_refused(agents: str) -> None:
    """Through `langgraph dev` the context goes to setup unchecked by the command line: resolve refuses it."""
    with pytest.raises(ConfigError) as caught:
        resolve(Context(model="fake", agents=agents))
    assert any(p.startswith(f"agents: {agents!r} names no agent") for p in caught.value.problems)


def test_a_context_value_nested_1500_deep_or_true_for_a_number_is_named() -> None:
    deep: Any = 1
    for _ in range(1500):
        deep = [deep]
    with pytest.raises(ConfigError) as caught:
        check_context(Context(agents=deep))
    assert caught.value.problems and all(len(p) < 300 for p in caught.value.problems)
    with pytest.raises(ConfigError) as caught:
        check_context(Context(summary_threshold=True))  # type: ignore[arg-type]
    assert caught.value.problems == [
        "summary_threshold: true is not a whole number; write one as digits, e.g. 3"
    ]


def test_the_judges_role_and_id_are_honoured(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"judge": {"id": "chief-justice", "role": "security"}}))
    judge = resolve(Context(model="fake", config_file=str(path)))["judge"]
    assert (judge["id"], judge["role"], judge["name"]) == ("judge", "judge", "Chief Justice")
    assert "Judge from the security outlook as well" in judge["system_prompt"]


def test_an_output_that_fails_at_the_end_keeps_the_debate_and_says_how_to_write_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, report, output = tmp_path / "d.sqlite", tmp_path / "r.md", tmp_path / "o.json"
    write = Path.write_text

    def full_disk(self: Path, *args: Any, **kwargs: Any) -> int:
        if self in (report, output):
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    code = main(
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
            "t",
            "--report",
            str(report),
            "--output",
            str(output),
            "p",
        ]
    )
    captured = capsys.readouterr()
    assert code == 6, captured.err
    assert "Traceback" not in captured.err and captured.out.strip(), "the solution is still printed"
    assert (
        f"--report {report} (No space left on device): write it again with `debate report t --db {db}"
        in captured.err
    )
    assert (
        f"--output {output} (No space left on device): write it again with `debate show t --db {db}"
        in captured.err
    )
    monkeypatch.undo()
    assert main(["report", "t", "--db", str(db), "--output", str(report)]) == 0
    assert report.read_text().startswith("#")


def test_a_refused_context_is_one_line_in_the_dev_servers_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """langgraph-api logs a failed run twice with its traceback; a ConfigError keeps one line, every problem in it.

    The records are built as langgraph-api's structlog set-up hands them to the standard logger: the event
    dict as the message, the traceback already rendered into it (checked by hand against `langgraph dev`).
    """
    import debate_engine.config.file  # noqa: F401 - the graph's import installs the filter

    error = "<class 'debate_engine.config.file.ConfigError'>(agents: ',' names no agent\nrounds: 0)"
    worker = logging.getLogger("langgraph_api.worker")
    with caplog.at_level(logging.INFO, logger="langgraph_api.worker"):
        worker.error(
            {"event": f"Run encountered an error in graph: {error}", "exception": "Traceback ..."}
        )
        worker.error(
            {"event": f"Background run failed. Exception: {error}", "exception": "Traceback ..."}
        )
        worker.error(
            {
                "event": "Background run failed. Exception: ValueError(x)",
                "exception": "Traceback ...",
            }
        )
    assert [r.getMessage() for r in caplog.records] == [
        str(event)
        for event in (
            {
                "event": "Background run failed. Exception: <class 'debate_engine.config.file.ConfigError'>(agents: ',' "
                "names no agent; rounds: 0)"
            },
            {
                "event": "Background run failed. Exception: ValueError(x)",
                "exception": "Traceback ...",
            },
        )
    ]
