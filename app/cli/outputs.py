"""What a finished (or stopped) command writes: JSON state, the report, the solution."""

from __future__ import annotations

import argparse
import io
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError, OutputError
from debate_engine.app.reports.verdict_section import verdict_line
from debate_engine.config.wording import quoted
from debate_engine.providers.secrets import redact

if TYPE_CHECKING:
    from debate_engine.app.reports.record import RunRecord

OUTPUT_FLAGS = ("output", "report", "csv", "md")
THREAD_HELP = (
    "the debate's id: what `debate run` prints first (`debate THREAD`), the first column of "
    "`debate list`, or the --thread-id the run was given"
)


def check_outputs(args: argparse.Namespace) -> None:
    """Find an output that cannot be written before the first model call, not after the debate.

    Each one is tried for real: a new file is created and removed, an existing one
    opened for appending (nothing written), a device such as ``/dev/full`` given one byte.
    """
    for flag in OUTPUT_FLAGS:
        target = getattr(args, flag, None)
        if target is None:
            continue
        problem = (
            _unwritable(Path(target)) if target.strip() else "is an empty name; give a file name"
        )
        if problem:
            raise InputError(f"--{flag} {quoted(target)} {problem}")


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written, or None when it can."""
    try:
        if path.is_dir():
            return f"is a directory; give a file name such as {path / 'debate.json'}"
        if not path.parent.exists():
            return f"cannot be written: the folder {path.parent} does not exist; create it first"
        if not path.parent.is_dir():
            return f"cannot be written: {path.parent} is a file, not a folder; choose another path"
        if path.exists():
            _try_existing(path)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            path.unlink()
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc}); choose another path"
    except ValueError:  # a NUL byte
        return "is not a file name that can be written"
    return None


def _try_existing(path: Path) -> None:
    """Open an existing file without changing it; give a device (not a terminal) one byte, so a full one fails."""
    fd = os.open(
        path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK
    )  # a FIFO with no reader fails, never blocks
    try:
        if stat.S_ISCHR(os.fstat(fd).st_mode) and not os.isatty(fd):
            os.write(fd, b"\n")
    finally:
        os.close(fd)


TEXT_SUFFIXES = (".md", ".markdown", ".txt")
"""An ``--output`` name ending so gets the solution's text; any other (``.json``) the whole state."""


def finish(values: RunRecord, args: argparse.Namespace) -> int:
    """Write the outputs asked for and print the solution (or say how to continue).

    Everything is redacted on the way out too: a debate stored by an older
    version, or a model that repeats a secret, must not put it on screen or disk.
    """
    from debate_engine.nodes.synthesize import render_solution  # start-up: no langgraph in --help

    failed = []
    for flag, target, text in _documents(values, args):
        try:
            Path(target).write_text(redact(text()), encoding="utf-8")
        except (
            OSError
        ) as exc:  # the folder was checked before the debate; the disk may have filled since
            failed.append(f"--{flag} {target} ({exc.strerror or exc}): {_again(flag, args)}")
    solution = values.get("solution")
    if solution:
        print(redact(render_solution(solution)))
        line = verdict_line(values)
        if line and not getattr(args, "quiet", False):
            print(redact(line), file=sys.stderr)
    elif not getattr(args, "quiet", False):
        print("the debate has not finished; continue it with `debate resume`", file=sys.stderr)
    if failed:
        raise OutputError("\n  ".join(["cannot write every output; the debate is saved.", *failed]))
    return EXIT_OK


def _documents(
    values: RunRecord, args: argparse.Namespace
) -> list[tuple[str, str, Callable[[], str]]]:
    """Return the outputs asked for: flag, file, and how to render its text."""
    from debate_engine.app.reports.charts import report_files  # start-up: no matplotlib in --help
    from debate_engine.app.reports.markdown import (  # start-up: no langgraph in --help
        export_state,
        render_report,
    )
    from debate_engine.nodes.synthesize import render_solution  # start-up: no langgraph in --help

    found: list[tuple[str, str, Callable[[], str]]] = []
    output = getattr(args, "output", None)
    if output and Path(output).suffix.lower() in TEXT_SUFFIXES:
        if solution := values.get("solution"):
            found.append(("output", output, lambda: render_solution(solution) + "\n"))
        elif not getattr(args, "quiet", False):
            print(f"--output {output}: no solution to write yet", file=sys.stderr)
    elif output:
        found.append(
            (
                "output",
                output,
                lambda: json.dumps(export_state(values), indent=2, ensure_ascii=False),
            )
        )
    if getattr(args, "report", None):
        found += [
            ("report", path, text)
            for path, text in report_files(values, args.report, lambda: render_report(values))
        ]
    return found


def _again(flag: str, args: argparse.Namespace) -> str:
    """Return the command that writes the output ``flag`` of a stored debate again."""
    thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
    db = f" --db {args.db}" if getattr(args, "db", None) else ""
    command = "report" if flag == "report" else "show"
    return f"write it again with `debate {command} {thread}{db} --output FILE`"


def say(args: argparse.Namespace, line: str) -> None:
    """Print a line of information on stderr, unless ``--quiet`` (which leaves errors only)."""
    if not getattr(args, "quiet", False):
        print(line, file=sys.stderr)


def db_of(args: argparse.Namespace) -> str:
    """Return the database a command uses: ``--db``, else the default."""
    from debate_engine.app.store.database import default_db  # start-up: no langgraph in --help

    return str(getattr(args, "db", None) or default_db())


def add_db(parser: argparse.ArgumentParser) -> None:
    """Add the ``--db`` option every stored-debate command takes."""
    parser.add_argument(
        "--db",
        default=None,
        help="checkpoint database: a path or postgresql://... "
        "(default $DEBATE_DB, else ~/.local/share/debate/debates.sqlite)",
    )


def add_outputs(parser: argparse.ArgumentParser) -> None:
    """``--output`` and ``--report``."""
    parser.add_argument(
        "--output",
        help="FILE.json: the whole final state as JSON; FILE.md or FILE.txt: the solution's text",
    )
    parser.add_argument("--report", help="write a Markdown report here")


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--quiet``, ``-v/--verbose`` and ``--env-file``: the options of the commands that call models."""
    parser.add_argument("--quiet", action="store_true", help="print nothing on stderr but errors")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show each model call and summary as it ends"
    )
    add_env_file(parser)


def add_env_file(parser: argparse.ArgumentParser) -> None:
    """``--env-file FILE``."""
    parser.add_argument(
        "--env-file",
        help="read KEY=VALUE lines (API keys, DEBATE_MODEL, ...) from FILE; "
        "variables already set win",
    )


def load_env_file(path: str | None) -> list[str]:
    """Set the variables of a KEY=VALUE file that are not set (or empty); return their names, never values."""
    if not path:
        return []
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--env-file {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputError(f"--env-file {path}: not UTF-8 text") from None
    except (RuntimeError, ValueError):  # ~nobody/..., a NUL byte
        raise InputError(
            f"--env-file {path}: not a path that can be read; give a full path"
        ) from None
    values = _parse_env(text)
    given = {k: v for k, v in values.items() if v is not None and not os.environ.get(k)}
    os.environ.update(given)
    loaded = list(given)
    return loaded


def _parse_env(text: str) -> dict[str, str | None]:
    """Return the file read as python-dotenv reads it (``export``, quotes, comments, multi-line values)."""
    from dotenv import dotenv_values  # start-up: python-dotenv only for --env-file

    return dict(dotenv_values(stream=io.StringIO(text)))
