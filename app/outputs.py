"""What a finished (or stopped) command writes: JSON state, the report, the solution."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from debate_engine.app.errors import EXIT_OK, UserError


def check_outputs(args: argparse.Namespace) -> None:
    """Find an unwritable output before the first model call, not after the debate."""
    for flag in ("output", "report"):
        target = getattr(args, flag, None)
        if not target:
            continue
        path = Path(target)
        if path.is_dir():
            raise UserError(f"--{flag} {target} is a directory; give a file name such as {path / 'debate.json'}")
        if not path.parent.exists() and str(path.parent) not in ("", "."):
            raise UserError(f"--{flag} {target}: the folder {path.parent} does not exist; create it first")


def where(status: dict[str, Any] | None) -> str:
    """Where a debate stands, in words."""
    if not status:
        return "its start"
    return f"round {status['round']}/{status['rounds']}, after {status['phase']}"


def finish(values: dict[str, Any], args: argparse.Namespace) -> int:
    """Write the outputs asked for and print the solution (or say how to continue)."""
    from debate_engine.app.report import export_state, render_report
    from debate_engine.nodes.synthesize import render_solution

    if getattr(args, "output", None):
        Path(args.output).write_text(json.dumps(export_state(values), indent=2, ensure_ascii=False), encoding="utf-8")
    if getattr(args, "report", None):
        Path(args.report).write_text(render_report(values), encoding="utf-8")
    solution = values.get("solution")
    if solution:
        print(render_solution(solution))
        return EXIT_OK
    print("the debate has not finished; continue it with `debate resume`", file=sys.stderr)
    return EXIT_OK


def db_of(args: argparse.Namespace) -> str:
    """The database a command uses: ``--db``, else the default."""
    from debate_engine.app.persistence import default_db

    return str(getattr(args, "db", None) or default_db())


def add_db(parser: argparse.ArgumentParser) -> None:
    """The ``--db`` option every stored-debate command takes."""
    parser.add_argument("--db", default=None, help="checkpoint database: a path or postgresql://... "
                        "(default $DEBATE_DB, else ~/.local/share/debate/debates.sqlite)")


def add_outputs(parser: argparse.ArgumentParser) -> None:
    """``--output`` and ``--report``."""
    parser.add_argument("--output", help="write the final state as JSON here")
    parser.add_argument("--report", help="write a Markdown report here")
