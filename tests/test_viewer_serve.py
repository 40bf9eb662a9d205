"""``debate serve`` at the command line: bad input found before it binds, the access token, a clean stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.viewer.guard import is_loopback
from debate_engine.app.viewer.serving import url_of
from tests.support.debate_cli import cli_env, debate_command


def test_serve_is_a_command_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    for option in ("--db", "--host", "--port", "--token", "--open"):
        assert option in shown


def test_a_bad_database_path_exits_2_before_binding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--db", str(tmp_path), "--port", "0"]) == 2
    assert "is a directory" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["serve", "--db", str(blocker / "debates.sqlite"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_a_database_server_that_fails_exits_5_without_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://viewer:hunter2-secret@127.0.0.1:{port}/debates"
    assert main(["serve", "--db", url, "--port", "0"]) == 5
    err = capsys.readouterr().err
    assert "PostgreSQL" in err and "hunter2-secret" not in err


def test_an_address_in_use_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--db", str(tmp_path / "d.sqlite"), "--port", str(port)]) == 2
    assert f"--port {port}: cannot listen there" in capsys.readouterr().err


def test_only_loopback_goes_without_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert url_of("0.0.0.0", 8080, "abc") == "http://0.0.0.0:8080/?token=abc"
    assert url_of("::1", 8080, None) == "http://[::1]:8080/"


def test_a_public_address_gets_a_token_and_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [
            *debate_command(),
            "serve",
            "--db",
            str(tmp_path / "d.sqlite"),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("debate serve: http://0.0.0.0:") and "/?token=" in line
        assert len(line.split("token=")[1].split()[0]) >= 16
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0 and "Traceback" not in err, err


def test_the_help_of_debate_does_not_load_the_web_stack() -> None:
    code = "import sys\nfrom debate_engine.app.cli import main\nmain._parser()\nprint('starlette' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ}
    )
    assert found.stdout.strip() == "False", found.stderr
