"""``debate report``: the Markdown report of a saved debate, as ``--report`` writes it during a run; with
``--html``, the debate as one self-contained HTML page to share (the page ``debate serve`` shows)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError, OutputError
from debate_engine.app.cli.outputs import add_db, check_outputs, db_of
from debate_engine.app.cli.show import stored_values
from debate_engine.app.reports.record import record_of
from debate_engine.providers.secrets import redact


def register(sub: Any) -> None:
    report = sub.add_parser("report", help="write the Markdown report of a saved debate")
    add_source(report)
    report.add_argument("--output", help="write the report here (default: stdout)")
    report.add_argument(
        "--html",
        metavar="FILE",
        help="write the debate as one self-contained HTML page here, to share: the page `debate "
        "serve` shows, read in any browser with no server, no script and nothing fetched (the "
        "Markdown then goes only where --output says)",
    )
    add_db(report)


def add_source(parser: argparse.ArgumentParser) -> None:
    """Which debate: a run's ``--output`` JSON, or a stored thread."""
    parser.add_argument(
        "source",
        nargs="?",
        metavar="DEBATE.json|THREAD",
        help="a run's --output JSON file, or the thread id of a stored debate",
    )
    parser.add_argument("--thread", help="the thread id of a debate stored in --db")


def load_export(path: str) -> dict[str, Any]:
    """Return a debate's values from the JSON ``debate run --output FILE.json`` wrote."""
    from debate_engine.app.reports.markdown import (  # start-up: no langgraph in --help
        values_from_export,
    )

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("transcript"), list)
        or "problem" not in data
    ):
        raise InputError(
            f"{path} is not a debate; give the JSON that `debate run --output FILE.json` writes"
        )
    return dict(values_from_export(data))  # untyped again: `debate eval` reads it so (app.measure)


def source_of(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """Return the debate ``source`` or ``--thread`` names: a JSON file's path, or else a thread id."""
    if args.source and args.thread:
        raise InputError("name one debate: a DEBATE.json file or --thread ID, not both")
    if not (args.source or args.thread):
        raise InputError(
            "name the debate: a DEBATE.json file (from `debate run --output`) or --thread ID"
        )
    if args.source and (Path(args.source).is_file() or args.source.endswith(".json")):
        return args.source, None
    return None, args.thread or args.source


def debate_of(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Return the debate named by ``source`` or ``--thread``, and how to name it: the file's path or ``thread:ID``."""
    from debate_engine.app.cli.runner import run_until_signal  # start-up: no langgraph in --help

    path, thread = source_of(args)
    if path:
        return load_export(path), path
    values = run_until_signal(stored_values(argparse.Namespace(thread=thread, db=args.db)))
    return values, f"thread:{thread}"


def html_of(args: argparse.Namespace) -> str:
    """Return the named debate as one self-contained HTML page (``app.viewer.sharing``)."""
    from debate_engine.app.cli.runner import run_until_signal  # start-up: no langgraph in --help
    from debate_engine.app.viewer.sharing import (  # start-up: Jinja2 and LangGraph load here
        thread_file,
        values_file,
    )

    path, thread = source_of(args)
    if path:
        return values_file(load_export(path), Path(path).name)
    found = run_until_signal(thread_file(db_of(args), str(thread)))
    if found is None:
        raise InputError(f"no debate {thread!r} in {db_of(args)}; see `debate list`")
    return found


def check_html(args: argparse.Namespace) -> None:
    """Find an ``--html`` file that cannot be written before the debate is read, as ``check_outputs`` does."""
    if args.html is None:
        return
    try:
        check_outputs(argparse.Namespace(output=args.html))
    except InputError as exc:
        said = exc.message().removeprefix("--output").replace("debate.json", "debate.html")
        raise InputError(f"--html{said}") from None


def write(path: str, text: str, what: str, flag: str) -> None:
    """Write ``text`` (redacted) to ``path``; a failure says how to write ``what`` elsewhere."""
    try:
        Path(path).write_text(redact(text), encoding="utf-8")
    except OSError as exc:  # the folder was checked first; the disk may have filled since
        raise OutputError(
            f"cannot write {path} ({exc.strerror or exc}); the debate is unchanged: write "
            f"{what} elsewhere with {flag} FILE"
        ) from None


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.reports.charts import report_files  # start-up: no matplotlib in --help
    from debate_engine.app.reports.markdown import render_report  # start-up: no langgraph in --help

    check_outputs(args)
    check_html(args)
    if args.html:
        write(args.html, html_of(args), "the page", "--html")
        if not args.output:
            return EXIT_OK
    values = record_of(debate_of(args)[0])
    if not args.output:
        sys.stdout.write(redact(render_report(values)))
        return EXIT_OK
    for path, text in report_files(values, args.output, lambda: render_report(values)):
        write(path, text(), "the report", "--output")
    return EXIT_OK
