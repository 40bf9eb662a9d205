"""A real PostgreSQL server on loopback for the integration tests (and ``bench/workers.py``).

``temporary_postgres()`` runs Debian's server binaries (``.ci/run`` installs
the ``postgresql`` package) on a free port in a fresh data folder, as the
``postgres`` user when running as root, and removes everything afterwards.
The ``postgres_server`` fixture starts one server per test session; the
``postgres_url`` fixture gives each test module its own fresh database on it.
A missing server skips, and the root conftest turns a skipped integration test
into a failed run unless ``DEBATE_ALLOW_SKIPS=1``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from debate_engine.providers.local_server import free_port


class NoPostgres(RuntimeError):
    """The PostgreSQL server binaries are not installed here."""


def _as_postgres(*cmd: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)


def server_bindir() -> Path:
    """Return the newest installed server's ``bin`` folder; raises NoPostgres when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found or (os.geteuid() == 0 and not shutil.which("runuser")):
        raise NoPostgres(
            "PostgreSQL server binaries are not installed (apt-get install postgresql)"
        )
    return Path(found[-1]).parent


@contextmanager
def temporary_postgres(max_connections: int = 200) -> Iterator[str]:
    """Start a throwaway server on 127.0.0.1 and yield its URL (database ``postgres``, trust auth)."""
    bindir = server_bindir()
    data = tempfile.mkdtemp(prefix="debate-pg-")
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c max_connections={max_connections} -c fsync=off"
    try:
        subprocess.run(
            _as_postgres(str(bindir / "initdb"), "-D", data, "-A", "trust", "-U", "postgres"),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            _as_postgres(
                str(bindir / "pg_ctl"),
                "-D",
                data,
                "-o",
                options,
                "-w",
                "start",
                "-l",
                f"{data}/log",
            ),
            check=True,
            capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres(str(bindir / "pg_ctl"), "-D", data, "-m", "fast", "stop"),
            capture_output=True,
        )
        shutil.rmtree(data, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """Create an empty database on the server and return its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """One PostgreSQL server for the whole test session."""
    pytest.importorskip(
        "langgraph.checkpoint.postgres", reason="needs `pip install -e '.[postgres]'`"
    )
    try:
        server_bindir()
    except NoPostgres as exc:
        pytest.skip(str(exc))
    with temporary_postgres() as url:
        yield url


@pytest.fixture(scope="module")
def postgres_url(postgres_server: str) -> str:
    """Return a fresh, empty database for each test module."""
    return fresh_database(postgres_server)
