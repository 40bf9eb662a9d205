"""A debate database for the viewer's tests: real debates on the fake model, made through the CLI in-process."""

from __future__ import annotations

from pathlib import Path

from debate_engine.app.cli.main import main

SCRIPT = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
"""Model-borne text that would run if any page failed to escape it."""
PROBLEM = f"What is 12+34? {SCRIPT}"
TEAM = "architect,kiss,testing"
ORIGINAL = (
    "run",
    "--model",
    "fake:solve=0",
    "--agents",
    TEAM,
    "--rounds",
    "3",
    "--thread-id",
    "phases-1",
)
FLIPPING = ("--model", "fake:solve=1", "--agents", "performance,security,generalist")
"""A fork's changes that flip the original's verdict."""


def run(db: Path, *argv: str) -> None:
    """Run one ``debate`` command against ``db``; fail loudly when it does not exit 0."""
    code = main([*argv, "--db", str(db), "--quiet"])
    assert code == 0, f"debate {' '.join(argv)} exited {code}"


def three_debates(db: Path) -> dict[str, str]:
    """Return the threads of a phase debate, a roundtable, and a fork of the first from round 2 with other agents.

    The original's agents always answer wrong (47) and keep their answer; the fork's new agents
    always answer right (46), so the fork's verdict flips.
    """
    run(db, *ORIGINAL, PROBLEM)
    run(
        db,
        "run",
        "--model",
        "fake",
        "--protocol",
        "roundtable",
        "--turns",
        "7",
        "--agents",
        "architect,security",
        "--thread-id",
        "table-1",
        "Pick a cache for the session store",
    )
    run(db, "fork", "phases-1", "--round", "2", *FLIPPING, "--thread-id", "phases-1-fork")
    return {"phases": "phases-1", "roundtable": "table-1", "fork": "phases-1-fork"}
