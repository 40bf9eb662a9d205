"""Provider faults through the whole engine: a named error every time, nothing lost, nothing leaked.

Every row runs the real ``debate run`` in-process against the loopback OpenAI-compatible server of
``tests/support/openai_server.py``, which injects one fault per request (FIFO) or the same fault on every
request. The expected transcript and request counts are written out by hand from the protocol: two agents
(kiss, security) and one round make 2 proposals + 2 critiques + 2 refinements + 1 synthesis = 7 calls.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debate_engine.app.cli.main import main
from tests.support.openai_server import OpenAIServer

KEY = "sk-test-FAULTKEY-123456"
THREAD = "f"
IDS = [
    "proposal:r1:kiss",
    "proposal:r1:security",
    "critique:r1:kiss->security",
    "critique:r1:security->kiss",
    "refinement:r1:kiss",
    "refinement:r1:security",
    "synthesis:r1:judge",
]
CALLS = 7  # one chat request per turn when nothing fails
BEFORE_REFINE = 4  # proposals and critiques: the turns finished before the refinements
HANG_S = 20.0
"""How long a hung request stays silent; a run that waits for it instead of its own timeout takes this long."""


@dataclass(frozen=True)
class Row:
    """One fault scenario and what the engine must do with it; every count is worked out from the protocol."""

    name: str
    faults: tuple[str, ...] = ()
    always: str | None = None
    healthy_first: int = 0
    """Requests answered normally before ``faults``/``always`` apply, so the fault strikes mid-debate."""
    timeout_ms: int = 10_000
    exits: frozenset[int] = frozenset({0})
    stderr: tuple[str, ...] = ()
    requests: int | None = None
    """Chat requests the run sends; None where a cancelled sibling call makes the count vary."""
    retried: bool = False
    """The faulted request's exact body is sent again once: the retry, not another call, saved the run."""
    retry_after: float = 1.0
    kept: int = 0
    """After a failure: turns the checkpoint holds."""
    resumed: int = CALLS
    """After a failure: chat requests the resume sends (the calls that had not finished)."""


ROWS = [
    # Retry-After is 1 s, more than the road's own first back-off (at most 0.5 s): a retry sent 1 s or
    # more after the 429 waited because the header said so.
    Row(
        "429 with Retry-After, once",
        faults=("429",),
        requests=CALLS + 1,
        retried=True,
        retry_after=1.0,
    ),
    Row("500 once", faults=("500",), requests=CALLS + 1, retried=True),
    Row("503 once", faults=("503",), requests=CALLS + 1, retried=True),
    Row("malformed JSON in a 200, once", faults=("malformed",), requests=CALLS + 1, retried=True),
    Row("dropped connection, once", faults=("drop",), requests=CALLS + 1, retried=True),
    Row("empty reply, once", faults=("empty",), requests=CALLS + 1, retried=True),
    # The two proposals run at once, so the first four requests are each proposal and its one retry (the
    # second proposal's retry may be cancelled before it is sent, once the first proposal has failed).
    Row(
        "empty reply, twice for each proposal",
        faults=("empty",) * 4,
        exits=frozenset({3}),
        stderr=("the model provider failed", "empty reply"),
        kept=0,
        resumed=CALLS,
    ),
    # The agent's deadline (1 s) covers the call with its retries. If the hang fails the call, the other
    # proposal finished long before the deadline: its result survives and the resume does not ask again.
    Row(
        "hang once, 1 s timeout",
        faults=("hang",),
        timeout_ms=1000,
        exits=frozenset({0, 3}),
        stderr=(),
        kept=0,
        resumed=CALLS - 1,
    ),
    Row(
        "500 on every request from the refinements on",
        always="500",
        healthy_first=BEFORE_REFINE,
        exits=frozenset({3}),
        stderr=("the model provider failed", "500"),
        kept=BEFORE_REFINE,
        resumed=CALLS - BEFORE_REFINE,
    ),
    Row(
        "malformed JSON on every request",
        always="malformed",
        exits=frozenset({3}),
        stderr=("the model provider failed", "JSONDecodeError"),
        kept=0,
        resumed=CALLS,
    ),
    Row(
        "a 401 echoing the key, from the refinements on",
        always="echo_key",
        healthy_first=BEFORE_REFINE,
        exits=frozenset({3}),
        stderr=("the model provider failed", "401"),
        kept=BEFORE_REFINE,
        resumed=CALLS - BEFORE_REFINE,
    ),
]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with OpenAIServer(words=10, hang_s=HANG_S) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield srv


def chat_requests(server: OpenAIServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["path"].split("?")[0].endswith("/chat/completions")]


def inject(server: OpenAIServer, row: Row) -> None:
    server.retry_after = row.retry_after
    # The server hands out one queued fault per request, FIFO; a queued None is a normal answer.
    server.faults.extend([None] * row.healthy_first)  # type: ignore[list-item]
    server.faults.extend(row.faults)
    server.always = row.always


def transcript_ids(path: Path) -> list[str]:
    return [t["id"] for t in json.loads(path.read_text(encoding="utf-8"))["transcript"]]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_the_debate(
    capsys: pytest.CaptureFixture[str],
    row: Row,
    tmp_path: Path,
    db: Path,
    output: Path,
    report: Path,
) -> tuple[int, str, str, float]:
    """Run the one-round debate against the faulty server; return its exit code, stdout, stderr and seconds."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"debate": {}}))
    started = time.monotonic()
    code, out, err = cli(
        capsys,
        "run",
        "--model",
        "openai:test-model",
        "--agents",
        "kiss,security",
        "--rounds",
        "1",
        "--db",
        str(db),
        "--quiet",
        "--thread-id",
        THREAD,
        "--config",
        str(config),
        "--output",
        str(output),
        "--report",
        str(report),
        "--timeout",
        str(row.timeout_ms / 1000),
        "Design a rate limiter",
    )
    return code, out, err, time.monotonic() - started


def check_the_faulted_run(
    row: Row, code: int, err: str, printed: str, requests: list[dict[str, Any]], seconds: float
) -> None:
    """Check the run under the fault: its exit, what it printed and the requests it sent."""
    assert code in row.exits, err
    assert "Traceback" not in printed
    for text in row.stderr:
        assert text in err, (text, err)
    if row.requests is not None:
        assert len(requests) == row.requests, [r["fault"] for r in requests]
    if row.retried:
        check_retried_once(row, requests)
    if (
        "empty reply" in row.stderr
    ):  # one call was asked exactly twice, got two empty replies, and failed
        sent = Counter(json.dumps(r["body"], sort_keys=True) for r in requests)
        assert max(sent.values()) == 2 and all(r["fault"] == "empty" for r in requests), (
            sent.values()
        )
    if row.faults[:1] == (
        "hang",
    ):  # a generous bound: 1 s timeout against a server silent for 20 s
        assert seconds < HANG_S / 2, (
            "the run waited for the hung server instead of the agent's timeout"
        )
    if row.faults[:1] == ("hang",) and code == 3:
        assert "TimeoutError" in err and "no answer within 1 s" in err, err
    if row.faults[:1] == ("hang",) and code == 0:
        assert len(requests) == CALLS + 1, [r["fault"] for r in requests]


def check_retried_once(row: Row, requests: list[dict[str, Any]]) -> None:
    """Check that the faulted request's exact body went out again exactly once (for a 429, no sooner than Retry-After)."""
    faulted = next(i for i, r in enumerate(requests) if r["fault"] == row.faults[0])
    again = [r for r in requests[faulted + 1 :] if r["body"] == requests[faulted]["body"]]
    assert len(again) == 1, "the faulted call was not sent again exactly once"
    if row.faults[0] == "429":  # a lower bound only: the road waited at least what Retry-After said
        assert again[0]["time"] - requests[faulted]["time"] >= row.retry_after


def show_and_resume(
    capsys: pytest.CaptureFixture[str],
    server: OpenAIServer,
    row: Row,
    tmp_path: Path,
    db: Path,
    output: Path,
    report: Path,
) -> str:
    """After a named error, ``show`` finds the finished turns and ``resume`` asks only for the others.

    Return what the two commands printed.
    """
    shown, shown_report = tmp_path / "shown.json", tmp_path / "shown.md"
    code, out, err = cli(
        capsys,
        "show",
        THREAD,
        "--db",
        str(db),
        "--output",
        str(shown),
        "--report",
        str(shown_report),
    )
    printed = out + err
    assert code == 0, err
    assert transcript_ids(shown) == IDS[: row.kept], (
        "the checkpoint lost (or invented) a finished turn"
    )
    server.faults.clear()
    server.always = None
    before = len(chat_requests(server))
    code, out, err = cli(
        capsys,
        "resume",
        THREAD,
        "--db",
        str(db),
        "--quiet",
        "--output",
        str(output),
        "--report",
        str(report),
    )
    printed += out + err
    assert code == 0, err
    assert len(chat_requests(server)) - before == row.resumed, "the resume re-asked a finished call"
    return printed


def check_nothing_leaked(
    server: OpenAIServer, row: Row, printed: str, logged: str, tmp_path: Path
) -> None:
    """Check that the key went out on every request, and is in nothing the engine printed, logged or wrote."""
    assert all(KEY in r["headers"].get("authorization", "") for r in chat_requests(server))
    assert KEY not in printed and KEY not in logged
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert {"d.sqlite", "o.json", "r.md"} <= {p.name for p in written}
    for (
        path,
        data,
    ) in written.items():  # the database with its -wal/-shm companions, the outputs, the reports
        assert KEY.encode() not in data, path
    if (
        row.always == "echo_key"
    ):  # the echoed error itself was stored, so the scan above had something to find
        assert any(b"Incorrect API key provided" in data for data in written.values())


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_a_provider_fault_ends_in_a_retry_or_a_named_resumable_error(
    row: Row,
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    db, output, report = tmp_path / "d.sqlite", tmp_path / "o.json", tmp_path / "r.md"
    inject(server, row)
    code, out, err, seconds = run_the_debate(capsys, row, tmp_path, db, output, report)
    printed = out + err
    check_the_faulted_run(row, code, err, printed, chat_requests(server), seconds)
    if code == 3:
        assert f"continue with: debate resume {THREAD} --db {db}" in err
        assert not output.exists(), "a failed run wrote its output as if it had finished"
        printed += show_and_resume(capsys, server, row, tmp_path, db, output, report)
    assert transcript_ids(output) == IDS
    assert (
        report.read_text(encoding="utf-8").count("\n#### ") == CALLS - 1
    )  # every contribution but the synthesis
    check_nothing_leaked(server, row, printed, caplog.text, tmp_path)


@pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="reads the process's open files from /proc"
)
def test_a_failed_run_leaves_no_connection_holding_the_database(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sibling call's writes still under way when the run failed finish before the connection closes.

    Closed under them, the connection lived on as a zombie until garbage collection, sometimes holding the
    write lock: the next command in the same process (a resume, a worker's next debate) found the database
    locked. Every such run left the file open.
    """
    server.always = "malformed"
    for attempt in range(4):
        db = tmp_path / f"d{attempt}.sqlite"
        code, _, err = cli(
            capsys,
            "run",
            "--model",
            "openai:test-model",
            "--agents",
            "kiss,security",
            "--rounds",
            "1",
            "--db",
            str(db),
            "--quiet",
            "--thread-id",
            THREAD,
            "Design a rate limiter",
        )
        assert code == 3, err
        still_open = [
            fd for fd in Path("/proc/self/fd").iterdir() if str(db) in str(fd.resolve(strict=False))
        ]
        assert not still_open, f"run {attempt}: {len(still_open)} files of the database still open"
