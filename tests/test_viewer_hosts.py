"""``debate serve`` answers only to its own names and pages: DNS rebinding, foreign origins, its cookie, TLS.

Each test talks to a real ``debate serve`` on a free loopback port, as a
browser under a rebound name, another site's page or a second viewer would,
with raw ``Host``, ``Origin`` and ``Referer`` headers; nothing leaves loopback.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from debate_engine.app.cli.main import main
from debate_engine.app.viewer import server_reading
from debate_engine.app.viewer.reading import Store
from tests.support.browser import served
from tests.support.debate_cli import cli_env, debate_command
from tests.support.viewer_debates import ORIGINAL, PROBLEM, run

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("/", "/debates/phases-1", "/static/viewer.css", "/new")
"""The list, a debate, a static file and the start form."""
REFUSED = "DNS rebinding"
"""What the refusal of a foreign name says."""
TOKEN = "a-viewer-token"

LOADED = 60.0
"""Seconds a request may take: the viewer answers in milliseconds, a loaded CI machine in seconds."""


def get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, timeout=LOADED, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, timeout=LOADED, **kwargs)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hosts") / "debates.sqlite"
    run(path, *ORIGINAL, PROBLEM)
    return path


@pytest.fixture(scope="module")
def site(db: Path) -> Iterator[str]:
    with served(db) as url:
        yield url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def without_token(url: str) -> str:
    """Return the printed URL of a tokened viewer without its ``?token=``."""
    return url.split("/?", 1)[0]


def start_form(site: str, thread: str) -> dict[str, str]:
    """Return a valid start form with the page's own form token, as a page of the viewer's origin reads it."""
    found = re.search(r'name="csrf" value="([^"]+)"', get(site + "/new").text)
    assert found
    return {
        "csrf": found[1],
        "problem": "Pick a queue",
        "model": "fake",
        "rounds": "1",
        "agents": "kiss,testing",
        "thread_id": thread,
    }


def test_only_the_loopback_names_at_its_port_are_served(site: str) -> None:
    port = port_of(site)
    for name in ("127.0.0.1", "localhost", "[::1]", "LocalHost"):
        for path in PAGES:
            got = get(site + path, headers={"Host": f"{name}:{port}"})
            assert got.status_code == 200, (name, path, got.text[:300])
    foreign = (
        "evil.example",
        f"rebind.example:{port}",
        f"localhost.rebind.example:{port}",
        f"127.0.0.1.rebind.example:{port}",
        f"127.0.0.1:{port + 1}",
        "localhost",  # port 80: not this viewer
        "",
    )
    for host in foreign:
        for path in PAGES:
            got = get(site + path, headers={"Host": host})
            assert got.status_code == 403 and REFUSED in got.text, (host, path, got.text[:300])
            assert 'name="csrf"' not in got.text and "phases-1" not in got.text


def test_a_foreign_name_or_page_starts_nothing(site: str) -> None:
    port = port_of(site)
    attempts = {
        "host-evil": {"Host": "evil.example"},
        "host-rebound": {"Host": f"rebind.example:{port}"},
        "origin-rebound": {"Origin": f"http://rebind.example:{port}"},
        "origin-null": {"Origin": "null"},
        "origin-other-port": {"Origin": f"http://127.0.0.1:{port + 1}"},
        "origin-other-scheme": {"Origin": f"https://127.0.0.1:{port}"},
        "referer-foreign": {"Referer": "http://evil.example/attack.html"},
    }
    for thread, headers in attempts.items():
        sent = post(site + "/new", data=start_form(site, thread), headers=headers)
        assert sent.status_code == 403, (thread, sent.text[:300])
    listed = get(site + "/").text
    assert not [thread for thread in attempts if thread in listed]
    # another site's script reading a page (a server in front allowing every origin) is refused too
    read = get(site + "/", headers={"Origin": "http://evil.example"})
    assert read.status_code == 403 and "another site" in read.text
    linked = get(site + "/", headers={"Referer": "http://chat.example/"})
    assert linked.status_code == 200  # a link from another site opens the list
    own = post(
        site + "/new",
        data=start_form(site, "own-page"),
        headers={"Origin": f"http://localhost:{port}"},
        follow_redirects=False,
    )
    assert own.status_code == 303, own.text[:300]


def test_two_tokened_viewers_on_one_host_keep_their_own_strict_cookies(db: Path) -> None:
    tokens = ("first-token", "second-token")
    with (
        served(db, "--token", tokens[0]) as first,
        served(db, "--token", tokens[1]) as second,
        httpx.Client(
            timeout=LOADED
        ) as browser,  # one cookie jar, which keeps cookies apart by name only
    ):
        one, two = without_token(first), without_token(second)
        for url, token in zip((one, two), tokens, strict=True):
            entered = browser.get(f"{url}/?token={token}", follow_redirects=False)
            assert entered.status_code == 303
            cookie = entered.headers["set-cookie"]
            assert cookie.startswith(f"debate_viewer_{port_of(url)}={token};"), cookie
            assert "samesite=strict" in cookie.lower() and "httponly" in cookie.lower()
            assert "secure" not in cookie.lower()  # plain http: a secure cookie would be lost
        assert browser.get(one + "/").status_code == 200
        assert browser.get(two + "/").status_code == 200


def first_line_of_answer(port: int, *headers: str) -> str:
    """Send a POST that announces 50 MB but sends a few bytes; return the answer's status line."""
    head = [
        "POST /new HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/x-www-form-urlencoded",
        "Content-Length: 50000000",
        *headers,
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + b"csrf=x&problem=")
        return conn.recv(4096).decode("latin-1").split("\r\n")[0]


def test_a_post_is_refused_before_its_body_is_read(db: Path) -> None:
    with served(db, "--token", TOKEN) as printed:
        url = without_token(printed)
        port = port_of(url)
        assert first_line_of_answer(port).split()[1] == "403"  # no access token
        cookie = f"Cookie: debate_viewer_{port}={TOKEN}"
        assert first_line_of_answer(port, cookie).split()[1] == "413"  # over the limit
        chunks = (b"x" * 100_000 for _ in range(20))  # 2 MB, chunked: no length announced
        streamed = post(url + "/new", content=chunks, headers={"Cookie": cookie.split(": ", 1)[1]})
        assert streamed.status_code == 413 and "at most 1 MB" in streamed.text


def test_bad_serve_flags_exit_2_before_anything_is_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "d.sqlite")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    cases = {
        ("--token", "7-chars"): "--token: give at least 8 characters",
        ("--tls-cert", str(tmp_path / "none.pem"), "--tls-key", str(junk)): (
            f"--tls-cert {tmp_path / 'none.pem'}: no such file"
        ),
        ("--tls-cert", str(junk), "--tls-key", str(tmp_path / "none.pem")): "--tls-key",
        ("--tls-key", str(junk)): "--tls-cert and --tls-key go together",
        ("--tls-cert", str(junk), "--tls-key", str(junk)): "cannot serve TLS with them",
    }
    for flags, said in cases.items():
        assert main(["serve", "--db", db, "--port", "0", *flags]) == 2, flags
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and "Traceback" not in err, (flags, err)
    # 8 characters pass: what stops this one is the database, a folder
    assert main(["serve", "--db", str(tmp_path), "--port", "0", "--token", "8-chars!"]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "--token" not in err


def test_off_loopback_the_start_says_the_token_travels_in_clear_text(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [*debate_command(), "serve", "--db", str(tmp_path / "d.sqlite")]
        + ["--host", "0.0.0.0", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("debate serve: http://0.0.0.0:")
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert "clear text" in err and "--tls-cert and --tls-key" in err, err


def certificate(folder: Path) -> tuple[Path, Path]:
    """Return a self-signed certificate for 127.0.0.1 and its key, made by the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        + ["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_a_certificate_and_key_serve_https_with_a_secure_cookie(db: Path, tmp_path: Path) -> None:
    cert, key = certificate(tmp_path)
    with served(db, "--token", TOKEN, "--tls-cert", str(cert), "--tls-key", str(key)) as printed:
        url = without_token(printed)
        assert url.startswith("https://127.0.0.1:")
        with httpx.Client(verify=False) as browser:  # a self-signed certificate
            entered = browser.get(f"{url}/?token={TOKEN}", follow_redirects=False)
            assert entered.status_code == 303
            assert "secure" in entered.headers["set-cookie"].lower()
            assert browser.get(url + "/debates/phases-1").status_code == 200


def mounted_module() -> ModuleType:
    """Load the file ``langgraph.json`` names as ``http.app`` by its path, as ``langgraph dev`` does."""
    spec = importlib.util.spec_from_file_location(
        "user_router_module", ROOT / "app/viewer/mounted.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_in_langgraph_dev_answer_to_loopback_names_at_any_port(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own threads are read through its API; here a store over the database stands in."""
    monkeypatch.setattr(server_reading, "ServerStore", lambda: Store(str(db)))
    with TestClient(mounted_module().app, base_url="http://127.0.0.1:2024") as client:
        for host in ("127.0.0.1:2024", "localhost:8123", "[::1]:2024"):
            got = client.get("/ui/", headers={"Host": host})
            assert got.status_code == 200 and "phases-1" in got.text, host
        for host in ("evil.example", "rebind.example:2024", "testserver"):
            for path in ("/ui/", "/ui/debates/phases-1", "/ui/static/viewer.css"):
                got = client.get(path, headers={"Host": host})
                assert got.status_code == 403 and REFUSED in got.text, (host, path)
        # the server allows every origin (CORS): another site's script must not read the pages
        read = client.get("/ui/", headers={"Origin": "http://evil.example"})
        assert read.status_code == 403 and "phases-1" not in read.text
