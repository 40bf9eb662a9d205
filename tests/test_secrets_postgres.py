"""A ``--db`` URL's password on a real PostgreSQL server: masked in the resume hint, the listing and the report.

The server trusts loopback connections, so the password in the URL is accepted
and never checked: the test runs a real debate through a URL that carries one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.store.database import athread_busy, athread_lock
from tests.integration.conftest import NoPostgres, fresh_database, server_bindir, temporary_postgres

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

PASSWORD = "Pg-Hunter2-0123456789"


@pytest.fixture(scope="module")
def url_with_password() -> Iterator[str]:
    pytest.importorskip(
        "langgraph.checkpoint.postgres", reason="needs `pip install -e '.[postgres]'`"
    )
    try:
        server_bindir()
    except NoPostgres as exc:
        pytest.skip(str(exc))
    with temporary_postgres(max_connections=20) as server:
        yield fresh_database(server).replace(
            "postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@"
        )


def test_a_failed_run_on_postgres_gives_a_resume_hint_without_the_password(
    url_with_password: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    masked = url_with_password.replace(PASSWORD, "***")
    run = [
        "run",
        "--model",
        "fake:fail=transport",
        "--agents",
        "kiss",
        "--rounds",
        "1",
        "--db",
        url_with_password,
    ]
    assert main([*run, "--thread-id", "pg-secret", "p"]) == 3
    err = capsys.readouterr().err
    assert f"continue with: debate resume pg-secret --db {masked}" in err, err

    report = tmp_path / "r.md"
    assert main(["show", "pg-secret", "--db", url_with_password, "--report", str(report)]) == 0
    assert main(["list", "--db", url_with_password]) == 0
    assert (
        main(["resume", "nothing-here", "--db", url_with_password]) == 2
    )  # names the database in its error
    shown = capsys.readouterr()
    assert "pg-secret\t" in shown.out and f"no debate 'nothing-here' in {masked}" in shown.err
    assert PASSWORD not in err + shown.out + shown.err + report.read_text()


def test_the_advisory_lock_is_async_and_excludes_a_second_holder(url_with_password: str) -> None:
    async def check() -> None:
        async with athread_lock(url_with_password, "t"):
            assert await athread_busy(url_with_password, "t") and not await athread_busy(
                url_with_password, "u"
            )
        assert not await athread_busy(url_with_password, "t")

    asyncio.run(check())
