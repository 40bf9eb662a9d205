"""No secret reaches stderr, logs, state or reports: one test per kind, each driving the real command line.

A provider (or a gateway in front of it) may quote a credential back in its
error, and a gateway URL may carry one in its path, which httpx logs. The
loopback gateway here does both, so each kind of secret has a real road into
every output; the tests check that redaction closes each road.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from debate_engine.app.cli.main import main
from debate_engine.providers.local_server import free_port
from debate_engine.providers.secrets import redact


class _Gateway(BaseHTTPRequestHandler):
    """Refuse every request with a 401 that quotes the session secret, as some gateways do."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        message = f"session {self.server.secret} has expired; sign in again"  # type: ignore[attr-defined]
        body = json.dumps(
            {"error": {"message": message, "type": "invalid_request_error", "code": "expired"}}
        )
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the engine's output, not the server's."""


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    yield server
    server.shutdown()
    server.server_close()


KINDS = [
    ("GATEWAY_TOKEN", "ghs-tok-5f4e3d2c1b0a9988"),
    ("WEBHOOK_SECRET", "whsec-9f8e7d6c5b4a3210"),
    ("GATEWAY_PASSWORD", "pw-Zx81-hunter2-Q"),
]


@pytest.mark.parametrize(("name", "secret"), KINDS, ids=[k[0].rsplit("_", 1)[1] for k in KINDS])
def test_a_secret_in_a_provider_error_and_a_gateway_url_reaches_no_output(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    gateway: ThreadingHTTPServer,
    name: str,
    secret: str,
) -> None:
    gateway.secret = secret  # type: ignore[attr-defined]
    monkeypatch.setenv(name, secret)
    monkeypatch.setenv(
        "OPENAI_BASE_URL", f"http://127.0.0.1:{gateway.server_address[1]}/s/{secret}/v1"
    )
    caplog.set_level(logging.INFO)  # httpx logs each request's URL at INFO
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "agents": [{"role": "kiss", "model": "fake"}, {"role": "testing", "model": "fake"}],
                "judge": {"model": "openai:test-model"},
                "debate": {"rounds": 1},
            }
        )
    )
    db = tmp_path / "d.sqlite"
    assert (
        main(["run", "--config", str(config), "--db", str(db), "--thread-id", "t1", "--quiet", "p"])
        == 3
    )
    printed = capsys.readouterr().err
    assert (
        "the model provider failed" in printed
        and "has expired" in printed
        and "debate resume t1" in printed
    )
    assert (
        main(
            [
                "show",
                "t1",
                "--db",
                str(db),
                "--report",
                str(tmp_path / "r.md"),
                "--output",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    assert main(["report", "t1", "--db", str(db)]) == 0
    assert main(["list", "--db", str(db)]) == 0
    shown = capsys.readouterr()
    printed += shown.out + shown.err

    assert secret not in printed
    assert "/s/[redacted]/v1" in caplog.text and secret not in caplog.text
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert {"d.sqlite", "r.md", "s.json"} <= {p.name for p in written}
    for (
        path,
        data,
    ) in written.items():  # the database with its -wal companion, the report, the state
        assert secret.encode() not in data, path
    assert any(b"has expired" in data for data in written.values()), (
        "the error was stored: the scan had a target"
    )


def test_a_database_url_password_is_masked_when_the_database_cannot_be_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://debate:Hunter2-Secret@127.0.0.1:{free_port()}/debates"
    for args in (
        ["run", "--model", "fake", "--thread-id", "t", "p"],
        ["resume", "t"],
        ["list"],
        ["show", "t"],
    ):
        assert main([*args, "--db", url]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: cannot use PostgreSQL") and "Hunter2-Secret" not in err, err


def test_a_password_quoted_in_the_problem_is_masked_in_state_listing_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, report = tmp_path / "d.sqlite", tmp_path / "r.md"
    problem = "Move postgresql://app:Hunter2-Secret@db.internal/prod to a pool"
    assert (
        main(
            [
                "run",
                "--model",
                "fake",
                "--rounds",
                "1",
                "--agents",
                "kiss",
                "--db",
                str(db),
                "--quiet",
                "--thread-id",
                "t",
                "--report",
                str(report),
                problem,
            ]
        )
        == 0
    )
    assert main(["list", "--db", str(db)]) == 0
    printed = capsys.readouterr()
    assert "postgresql://app:***@db.internal/prod" in printed.out
    assert "Hunter2-Secret" not in printed.out + printed.err
    for path in (*tmp_path.glob("d.sqlite*"), report):
        if path.is_file():
            assert b"Hunter2-Secret" not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("--db postgresql://user:PASSWORD99@host/db", "--db postgresql://user:***@host/db"),
        (
            "postgres://:p4ss/w0rd@host:5432/db?sslmode=require",
            "postgres://:***@host:5432/db?sslmode=require",
        ),
        ("host=db user=app password='s3cr et' dbname=x", "host=db user=app password=*** dbname=x"),
        (
            "postgresql://host/db?user=app&password=s3cret99&sslmode=off",
            "postgresql://host/db?user=app&password=***&sslmode=off",
        ),
        (
            "http://127.0.0.1:8080/v1 and user@example.com",
            "http://127.0.0.1:8080/v1 and user@example.com",
        ),
        ("postgresql://user@host/db", "postgresql://user@host/db"),
    ],
)
def test_every_form_of_database_password_is_masked(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_database_url_and_dsn_variables_are_secrets_but_a_masked_url_stays_readable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:Hunter2-Secret@db/prod")
    monkeypatch.setenv("QUEUE_DSN", "redis://cache.internal:6379/0")
    monkeypatch.setenv("PGPASSWORD", "pg-only-pass")
    assert (
        redact("--db postgresql://app:Hunter2-Secret@db/prod")
        == "--db postgresql://app:***@db/prod"
    )
    assert (
        redact("queue at redis://cache.internal:6379/0, pass pg-only-pass")
        == "queue at [redacted], pass [redacted]"
    )
