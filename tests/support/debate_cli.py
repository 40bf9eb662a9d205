"""Run the real ``debate`` command, in this process or in subprocesses, and watch its progress in its SQLite file.

``in_process`` calls the real entry point with its streams captured: what a command prints and returns, at no
interpreter's start. A subprocess (``cli``, ``background``) is for tests where a signal, a second process or a
fresh interpreter is the point; those are marked ``integration`` and run by ``make test``.

Each finished model call is one ``__return__`` write of its task in the checkpoint, so "after N
contributions" is observable without timing.
"""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main


def debate_command() -> list[str]:
    """Return the installed console script next to this interpreter (what users run)."""
    script = Path(sys.executable).parent / "debate"
    return (
        [str(script)] if script.exists() else [sys.executable, "-m", "debate_engine.app.cli.main"]
    )


def cli_env(**extra: str) -> dict[str, str]:
    """Return the environment of every CLI run: no default model, blank keys, no tracing, nothing but loopback."""
    drop = {
        "DEBATE_MODEL",
        "DEBATE_DB",
        "OPENAI_BASE_URL",
        "OPENROUTER_API_KEY",
        "OPENROUTER_BASE_URL",
    }
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        OPENAI_API_KEY="",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@dataclass(frozen=True)
class Finished:
    """What a command run in this process left: the fields a finished subprocess has."""

    returncode: int
    stdout: str
    stderr: str


def in_process(*args: str, env: Mapping[str, str] | None = None, stdin: str = "") -> Finished:
    """Run ``debate ARGS`` through ``main`` with its streams captured, in the environment ``env``.

    ``env`` replaces the whole environment for the command, as it would for a subprocess (``cli_env()`` when
    not given), and is put back afterwards; ``stdin`` is what the command reads, as if typed.
    """
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        wanted = dict(env if env is not None else cli_env())
        for name in set(os.environ) - set(wanted):
            patch.delenv(name)
        for name, value in wanted.items():
            patch.setenv(name, value)
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's usage errors and --help
                code = int(exit_.code or 0)
    return Finished(code, out.getvalue(), err.getvalue())


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``debate ARGS`` to its end."""
    return subprocess.run(
        [*debate_command(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or cli_env(),
    )


@contextmanager
def background(
    *args: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """Start ``debate ARGS`` with stderr in ``log``; whatever happens, the process is gone afterwards."""
    with open(log, "w") as err:
        process = subprocess.Popen(
            [*debate_command(), *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env=env or cli_env(),
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def finished_calls(db: Path, thread: str = "k") -> int:
    """Model calls of ``thread`` whose result is in the checkpoint (summaries not counted)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM writes WHERE thread_id = ? AND channel = '__return__' "
                "AND task_path NOT LIKE '%summarize%'",
                (thread,),
            ).fetchone()
    except sqlite3.Error:  # not created yet, or busy for a moment
        return 0
    return int(row[0])


def wait_for(
    process: subprocess.Popen[str], ready: Any, what: str, log: Path, limit_s: float = 60
) -> None:
    """Poll until ``ready()``; fail (never hang) when the process ends first or nothing happens."""
    deadline = time.monotonic() + limit_s
    while not ready():
        if process.poll() is not None:
            pytest.fail(
                f"the run ended (exit {process.returncode}) before {what}:\n{log.read_text()[-3000:]}"
            )
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {limit_s} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.005)
