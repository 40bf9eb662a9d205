"""``debate report``: the Markdown report of a stored debate, as ``--report`` writes it during a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from debate_engine.app.errors import EXIT_OK
from debate_engine.app.outputs import add_db, check_outputs


def register(sub: Any) -> None:
    report = sub.add_parser("report", help="write the Markdown report of a stored debate")
    report.add_argument("thread")
    report.add_argument("--output", help="write the report here (default: stdout)")
    add_db(report)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.commands.show import stored_values
    from debate_engine.app.report import render_report
    from debate_engine.app.runner import run_until_signal

    check_outputs(args)
    text = render_report(run_until_signal(stored_values(args)))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK
