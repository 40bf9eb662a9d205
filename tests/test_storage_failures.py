"""The database failing during a run: its own exit code, a message naming the failure, the resume hint, kept turns.

A full disk is made real without a tiny filesystem: SQLite's ``max_page_count``
caps the file at its current size after a few checkpoints, so the next write
that needs a page fails with ``SQLITE_FULL``, the very error a full disk gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from debate_engine.app.cli.main import main
from debate_engine.errors import EXIT_INPUT, EXIT_STORAGE

RUN = [
    "run",
    "--model",
    "fake",
    "--rounds",
    "2",
    "--agents",
    "kiss,testing",
    "--thread-id",
    "one",
    "--quiet",
    "p",
]
TURNS = 2 + 2 + 2 + 2 + 2 + 1
"""Two agents, two rounds: proposals, critiques, refinements, critiques, refinements, the synthesis."""


def fill_disk_after(monkeypatch: pytest.MonkeyPatch, puts: int) -> None:
    """From the ``puts``-th checkpoint on, the database may not grow by a single page."""
    original = AsyncSqliteSaver.aput
    seen = 0

    async def aput(self: AsyncSqliteSaver, *args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen == puts:
            async with self.conn.execute("PRAGMA page_count") as cur:
                row = await cur.fetchone()
            await self.conn.execute(f"PRAGMA max_page_count = {row[0]}")  # type: ignore[index]
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(AsyncSqliteSaver, "aput", aput)


def transcript(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    out = tmp_path / "state.json"
    assert main(["show", "one", "--db", str(db), "--output", str(out)]) == 0
    capsys.readouterr()
    return list(json.loads(out.read_text())["transcript"])


def test_a_full_disk_during_a_run_exits_5_names_the_failure_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "d.sqlite"
    fill_disk_after(monkeypatch, puts=6)
    assert main([*RUN, "--db", str(db)]) == EXIT_STORAGE != EXIT_INPUT
    err = capsys.readouterr().err
    assert (
        f"error: the debate database {db} failed (OperationalError: database or disk is full)"
        in err
    )
    assert f"continue with: debate resume one --db {db}" in err
    assert "pass --db" not in err and "Traceback" not in err
    monkeypatch.undo()  # the disk has room again

    kept = transcript(db, tmp_path, capsys)
    assert 0 < len(kept) < TURNS
    assert main(["resume", "one", "--db", str(db), "--quiet"]) == 0
    done = transcript(db, tmp_path, capsys)
    assert len(done) == TURNS and len({t["id"] for t in done}) == TURNS
    assert [t["id"] for t in done[: len(kept)]] == [
        t["id"] for t in kept
    ]  # the kept turns were not redone


def test_a_database_that_cannot_be_opened_is_still_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.sqlite"
    db.write_bytes(b"not a database, not even close" * 100)
    assert main([*RUN, "--db", str(db)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert (
        "cannot use the debate database" in err
        and "pass --db PATH" in err
        and "debate resume" not in err
    )
