"""What a finished (or stopped) command writes: JSON state, the report, the solution."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from debate_engine.app.errors import EXIT_OK, UserError


def check_outputs(args: argparse.Namespace) -> None:
    """Find an unwritable output before the first model call, not after the debate."""
    for flag in ("output", "report", "csv", "md"):
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


TEXT_SUFFIXES = (".md", ".markdown", ".txt")
"""An ``--output`` name ending so gets the solution's text; any other (``.json``) the whole state."""


def finish(values: dict[str, Any], args: argparse.Namespace) -> int:
    """Write the outputs asked for and print the solution (or say how to continue).

    Everything is redacted on the way out too: a debate stored by an older
    version, or a model that repeats a secret, must not put it on screen or disk.
    """
    from debate_engine.app.report import export_state, render_report
    from debate_engine.nodes.synthesize import render_solution
    from debate_engine.providers.secrets import redact

    output = getattr(args, "output", None)
    if output and Path(output).suffix.lower() in TEXT_SUFFIXES:
        if values.get("solution"):
            Path(output).write_text(redact(render_solution(values["solution"])) + "\n", encoding="utf-8")
        else:
            print(f"--output {output}: no solution to write yet", file=sys.stderr)
    elif output:
        text = json.dumps(export_state(values), indent=2, ensure_ascii=False)
        Path(output).write_text(redact(text), encoding="utf-8")
    if getattr(args, "report", None):
        Path(args.report).write_text(redact(render_report(values)), encoding="utf-8")
    solution = values.get("solution")
    if solution:
        print(redact(render_solution(solution)))
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
    parser.add_argument("--output", help="FILE.json: the whole final state as JSON; FILE.md or FILE.txt: "
                        "the solution's text")
    parser.add_argument("--report", help="write a Markdown report here")


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--quiet``, ``-v/--verbose`` and ``--env-file``: the options of the commands that call models."""
    parser.add_argument("--quiet", action="store_true", help="no progress and no summary line on stderr")
    parser.add_argument("-v", "--verbose", action="store_true", help="show each model call and summary as it ends")
    add_env_file(parser)


def add_env_file(parser: argparse.ArgumentParser) -> None:
    """``--env-file FILE``."""
    parser.add_argument("--env-file", help="read KEY=VALUE lines (API keys, DEBATE_MODEL, ...) from FILE; "
                        "variables already set win")


def load_env_file(path: str | None) -> list[str]:
    """Set the variables of a KEY=VALUE file that are not set (or empty); return their names, never values."""
    if not path:
        return []
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"--env-file {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise UserError(f"--env-file {path}: not UTF-8 text") from None
    except (RuntimeError, ValueError):  # ~nobody/..., a NUL byte
        raise UserError(f"--env-file {path}: not a path that can be read; give a full path") from None
    values = _parse_env(text)
    loaded = [k for k, v in values.items() if v is not None and not os.environ.get(k)]
    for key in loaded:
        os.environ[key] = values[key]  # type: ignore[assignment]
    return loaded


def _parse_env(text: str) -> dict[str, str | None]:
    """The file read as python-dotenv reads it (``export``, quotes, comments, multi-line values)."""
    import io

    from dotenv import dotenv_values

    return dict(dotenv_values(stream=io.StringIO(text)))
