"""``debate eval``: evaluator agents score a finished debate's solution, criterion by criterion."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate_engine.app.cli.exit_codes import EXIT_OK, EXIT_PROVIDER, InputError, OutputError
from debate_engine.app.cli.outputs import add_db, add_env_file, check_outputs, load_env_file
from debate_engine.app.cli.report import add_source, debate_of

if TYPE_CHECKING:
    from debate_engine.app.measure.evaluate import Evaluator


def register(sub: Any) -> None:
    ev = sub.add_parser("eval", help="score a finished debate's solution with evaluator agents")
    add_source(ev)
    ev.add_argument(
        "--config",
        help="JSON config file whose `evaluators` list (agent entries) sets the evaluators",
    )
    ev.add_argument(
        "--model",
        help="one evaluator on this model (with --config: every evaluator's model); "
        "default: an evaluator's own model, else the debate's judge model",
    )
    ev.add_argument("--output", help="write the evaluation as JSON here (default: stdout)")
    ev.add_argument(
        "--csv", help="append one row with the averages to this CSV file (the header once)"
    )
    ev.add_argument("--md", help="write the scores as a Markdown table here")
    add_env_file(ev)
    add_db(ev)


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.cli.runner import run_until_signal  # start-up: no langgraph in --help
    from debate_engine.app.measure.evaluate import (  # start-up: no langgraph in --help
        evaluate,
        evaluators_of,
    )
    from debate_engine.providers.factory import check_credentials  # start-up: no asyncio in --help

    load_env_file(args.env_file)
    check_outputs(args)
    values, source = debate_of(args)
    if not values.get("solution"):
        raise InputError(
            f"{source} has no solution to evaluate yet; finish it with `debate resume`"
        )
    judge = ((values.get("settings") or {}).get("judge") or {}).get("model")
    evaluators = evaluators_of(args.config, args.model, judge)
    for evaluator in evaluators:
        check_credentials(
            evaluator.models[0]
        )  # a missing API key is an input error, found before any call
    doc = run_until_signal(evaluate(values, evaluators, source, on_start=_started, on_done=_ended))
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    if args.md:
        _write(args.md, markdown(doc), "md")
    if not doc["parsed"]:
        print(
            "error: no evaluator's reply could be parsed, so there are no scores"
            + (f"; nothing appended to {args.csv}" if args.csv else ""),
            file=sys.stderr,
        )
        return EXIT_PROVIDER
    if args.csv:
        try:
            append_csv(args.csv, doc)
        except OSError as exc:
            raise OutputError(
                f"cannot append to --csv {args.csv} ({exc.strerror or exc})"
            ) from None
    return EXIT_OK


def _started(evaluator: Evaluator) -> None:
    """Which model an evaluator uses, and why that one, before it is called."""
    print(f"evaluator {evaluator.id}: {evaluator.models[0]} ({evaluator.chosen})", file=sys.stderr)


def _ended(record: dict[str, Any]) -> None:
    """One line per evaluator as it ends: its overall score, or why it failed."""
    who = f"evaluator {record['id']} ({record['model']})"
    if record["status"] == "ok":
        print(
            f"{who}: overall {record['criteria']['overall']['score']}/10, "
            f"{record['latency_ms'] / 1000:.1f} s",
            file=sys.stderr,
        )
    else:
        print(f"{who} failed: {record['error']}", file=sys.stderr)


def _write(path: str, text: str, flag: str = "output") -> None:
    """Write one output; a failure (a full disk) is named, and the scores stay on stdout when --output failed."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        if flag == "output":
            sys.stdout.write(text)
        raise OutputError(
            f"cannot write --{flag} {path} ({exc.strerror or exc})"
            + ("; the evaluation is printed on stdout instead" if flag == "output" else "")
        ) from None


def append_csv(path: str, doc: dict[str, Any]) -> None:
    """One row per evaluated debate with the averages; the header only when the file is new or empty."""
    target = Path(path)
    new = not target.exists() or target.stat().st_size == 0
    with target.open("a", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(
                ["evaluated_at", "source", "problem", "evaluators", "parsed", *doc["criteria"]]
            )
        writer.writerow(
            [
                doc["evaluated_at"],
                doc["source"],
                doc["problem"],
                len(doc["evaluators"]),
                doc["parsed"],
                *(doc["averages"][c] for c in doc["criteria"]),
            ]
        )


def markdown(doc: dict[str, Any]) -> str:
    """Return the scores as a table (one column per evaluator, then the average), then every justification."""
    from debate_engine.app.measure.evaluate import CRITERIA  # start-up: no langgraph in --help

    records = doc["evaluators"]
    head = [f"{r['id']} (`{r['model']}`)" for r in records]
    lines = [
        "# Evaluation",
        "",
        f"Debate: {doc['source']}: {doc['problem']}",
        "",
        "| criterion | " + " | ".join([*head, "average"]) + " |",
        "|---" * (len(records) + 2) + "|",
    ]
    for name, label in CRITERIA.items():
        cells = [
            str(r["criteria"][name]["score"]) if r["status"] == "ok" else "failed" for r in records
        ]
        average = doc["averages"][name]
        lines.append(
            f"| {label} | "
            + " | ".join([*cells, "n/a" if average is None else f"{average:.2f}"])
            + " |"
        )
    failed = [r for r in records if r["status"] != "ok"]
    if failed:
        lines += ["", "Failed evaluators (left out of the averages):", ""]
        lines += [f"- {r['id']} (`{r['model']}`): {r['error']}" for r in failed]
    for record in records:
        if record["status"] == "ok":
            lines += ["", f"## {record['id']} (`{record['model']}`)", ""]
            lines += [
                f"- **{label}** ({record['criteria'][name]['score']}/10): "
                f"{' '.join(record['criteria'][name]['justification'].split())}"
                for name, label in CRITERIA.items()
            ]
    return "\n".join(lines) + "\n"
