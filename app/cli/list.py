"""``debate list``: the stored debates, newest first, from one small record per thread."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from debate_engine.app.cli.exit_codes import EXIT_OK, InputError
from debate_engine.app.cli.outputs import add_db, db_of
from debate_engine.app.reports.standing import RUNNING, RateWait, rows_of
from debate_engine.app.reports.standing import (
    row_from as row_from,  # re-exported: callers import it from here
)
from debate_engine.providers.secrets import redact

if TYPE_CHECKING:
    from debate_engine.app.reports.standing import ListRow

COLUMNS = (
    "thread",
    "updated",
    "status",
    "round",
    "phase",
    "turns",
    "tokens",
    "cost",
    "problem",
    "forked from",
)
"""The fork's origin comes last: a script that reads the first nine columns reads what it always read."""
DEFAULT_LIMIT = 20


def register(sub: Any) -> None:
    """Add ``debate list`` to the command line's subcommands (``sub``: argparse's, untyped)."""
    listing = sub.add_parser(
        "list",
        help="list stored debates, newest first",
        description="List the stored debates, the most recently updated first.",
    )
    listing.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show the newest N (default {DEFAULT_LIMIT})",
    )
    listing.add_argument("--all", action="store_true", help="show every debate")
    listing.add_argument(
        "--json", action="store_true", help="one JSON object per line, every field named"
    )
    add_db(listing)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.runner import run_until_signal  # start-up: no langgraph in --help

    if args.limit < 1 and not args.all:
        raise InputError(f"--limit {args.limit}: show at least 1 debate, or every one with --all")
    rows = sorted(
        run_until_signal(rows_of(db_of(args))), key=lambda r: r["updated_at"], reverse=True
    )
    if not rows:
        print("no debates yet; start one with `debate run PROBLEM`", file=sys.stderr)
        return EXIT_OK
    shown = rows if args.all else rows[: args.limit]
    waiting = rate_waits(db_of(args), shown)
    partial = {row["thread"]: row["partial"] for row in shown if row.get("partial")}
    if args.json:
        for row in shown:
            listed = row.copy()
            if row["thread"] in waiting:
                listed["waiting"] = waiting[row["thread"]]
            print(redact(json.dumps(listed, ensure_ascii=False)))
    else:
        print("\t".join(COLUMNS))
        for row in shown:
            cells = _cells(row)
            cells[2] += " (partial)" if row["thread"] in partial else ""  # said in full below
            if wait := waiting.get(row["thread"]):
                cells[2] += f", waiting {wait['seconds']:.0f} s for {wait['model']}'s rate limit"
            print(redact("\t".join(cells)))
        for thread, said in partial.items():  # who is missing and why, beside the table
            print(redact(f"{thread} is partial: {said}"), file=sys.stderr)
    if len(shown) < len(rows):
        print(
            f"the newest {len(shown)} of {len(rows)} debates; --all shows every one",
            file=sys.stderr,
        )
    return EXIT_OK


def rate_waits(db: str, rows: list[ListRow]) -> dict[str, RateWait]:
    """Return, by thread, the model each running debate waits for and the seconds left: the road records its waits
    where every process on the database reads them (``app.store.shared_limits``)."""
    from debate_engine.app.store.shared_limits import waits_in  # start-up: no langgraph in --help

    running = {row["thread"] for row in rows if row["status"] == RUNNING}
    if not running:
        return {}
    return {
        run: RateWait(model=model, seconds=round(left, 1))
        for run, (model, left) in waits_in(db).items()
        if run in running
    }


def _cells(row: ListRow) -> list[str]:
    """Return a row as the table prints it: tokens and cost name the cached prompt tokens and the saving when any."""
    from debate_engine.app.store.forking import origin_text  # start-up: no langgraph in --help

    updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["updated_at"]))
    tokens, cost = str(row["tokens"]), f"${row['cost']:.4f}"
    if row[
        "cached_tokens"
    ]:  # only where the provider reported a prompt cache, so other rows stay plain numbers
        tokens, cost = (
            f"{tokens} ({row['cached_tokens']} cached)",
            f"{cost} (saved ${row['saved']:.4f})",
        )
    return [
        row["thread"],
        updated,
        row["status"],
        f"{row['round']}/{row['rounds']}",
        row["phase"],
        str(row["turns"]),
        tokens,
        cost,
        " ".join(row["problem"].split())[:60],
        origin_text(row["forked_from"]) or "-",
    ]
