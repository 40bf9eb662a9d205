"""The ``debate`` subcommands; each returns its exit code."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from debate_engine.app.cli import EXIT_OK, UserError
from debate_engine.app.persistence import default_db, open_checkpointer, status_of, thread_busy, thread_ids, thread_lock
from debate_engine.app.progress import Progress
from debate_engine.app.report import export_state, render_report
from debate_engine.app.runner import drive, run_until_signal
from debate_engine.graph.builder import compile_debate
from debate_engine.graph.config import resolve
from debate_engine.graph.context import Context
from debate_engine.nodes.synthesize import render_solution
from debate_engine.providers.factory import chat_model


def _db(args: argparse.Namespace) -> str:
    return str(args.db or default_db())


def _problem(args: argparse.Namespace) -> str:
    if args.problem_file:
        try:
            text = Path(args.problem_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read problem file {args.problem_file}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UserError(f"problem file {args.problem_file} is not UTF-8 text; save it as UTF-8") from None
    else:
        text = args.problem or ""
    if not text.strip():
        raise UserError("no problem given; pass it as an argument or with --problem-file FILE")
    return text.strip()


def _check_outputs(args: argparse.Namespace) -> None:
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


def _context(args: argparse.Namespace) -> Context:
    if args.config and not Path(args.config).is_file():
        raise UserError(f"config file {args.config} does not exist; check the path")
    context = Context(
        model=args.model or "", agents=args.agents or "", rounds=args.rounds,
        config_file=str(Path(args.config).resolve()) if args.config else "", clarify=args.clarify,
        max_output_tokens=args.max_output_tokens, context_window=args.context_window,
        max_concurrency=args.max_concurrency, summary_method=args.summary_method or "",
        summarize=False if args.no_summary else None,
    )
    settings = resolve(context)  # raises ConfigError listing every problem
    for profile in (*settings["agents"], settings["judge"]):
        if not profile["model"].startswith("local"):
            chat_model(profile["model"])  # a missing API key is an input error, found before any call
    return context


def run(args: argparse.Namespace) -> int:
    problem = _problem(args)
    _check_outputs(args)
    context = _context(args)
    args.thread_id = args.thread_id or f"debate-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    return run_until_signal(_run(args, problem, context))


async def _run(args: argparse.Namespace, problem: str, context: Context) -> int:
    db = _db(args)
    async with open_checkpointer(db) as saver:
        graph = compile_debate(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": args.thread_id}}
        with thread_lock(db, args.thread_id):
            if (await graph.aget_state(config)).values:
                raise UserError(f"thread {args.thread_id} already holds a debate; use `debate resume "
                                f"{args.thread_id}` or another --thread-id")
            print(f"debate {args.thread_id}", file=sys.stderr)
            snapshot = await drive(graph, {"problem": problem}, config, context, Progress(args.quiet))
    return _finish(snapshot.values, args)


def resume(args: argparse.Namespace) -> int:
    _check_outputs(args)
    return run_until_signal(_resume(args))


async def _resume(args: argparse.Namespace) -> int:
    db = _db(args)
    async with open_checkpointer(db) as saver:
        graph = compile_debate(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": args.thread}}
        with thread_lock(db, args.thread):
            snapshot = await graph.aget_state(config)
            if not snapshot.values:
                raise UserError(f"no debate {args.thread!r} in {db}; see `debate list`")
            if snapshot.values.get("solution"):
                print(f"debate {args.thread} is already finished", file=sys.stderr)
                return _finish(snapshot.values, args)
            print(f"resuming debate {args.thread} at {_where(snapshot.values.get('status'))}", file=sys.stderr)
            snapshot = await drive(graph, None, config, None, Progress(args.quiet))
    return _finish(snapshot.values, args)


def _finish(values: dict[str, Any], args: argparse.Namespace) -> int:
    if args.output:
        Path(args.output).write_text(json.dumps(export_state(values), indent=2, ensure_ascii=False), encoding="utf-8")
    if args.report:
        Path(args.report).write_text(render_report(values), encoding="utf-8")
    solution = values.get("solution")
    if solution:
        print(render_solution(solution))
        return EXIT_OK
    print("the debate has not finished; continue it with `debate resume`", file=sys.stderr)
    return EXIT_OK


def _where(status: dict[str, Any] | None) -> str:
    if not status:
        return "its start"
    return f"round {status['round']}/{status['rounds']}, after {status['phase']}"


async def _values(args: argparse.Namespace) -> dict[str, Any]:
    async with open_checkpointer(_db(args)) as saver:
        snapshot = await compile_debate(checkpointer=saver).aget_state({"configurable": {"thread_id": args.thread}})
    if not snapshot.values:
        raise UserError(f"no debate {args.thread!r} in {_db(args)}; see `debate list`")
    return dict(snapshot.values)


def show(args: argparse.Namespace) -> int:
    _check_outputs(args)
    values = run_until_signal(_values(args))
    print(f"thread {args.thread}: {_where(values.get('status'))}", file=sys.stderr)
    return _finish(values, args)


def report(args: argparse.Namespace) -> int:
    _check_outputs(args)
    values = run_until_signal(_values(args))
    text = render_report(values)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def list_debates(args: argparse.Namespace) -> int:
    rows = run_until_signal(_rows(_db(args)))
    if not rows:
        print("no debates yet; start one with `debate run PROBLEM`", file=sys.stderr)
        return EXIT_OK
    print("thread\tupdated\tstatus\tround\tphase\tturns\tproblem")
    for row in rows:
        print("\t".join(row))
    return EXIT_OK


async def _rows(db: str) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    async with open_checkpointer(db) as saver:
        for thread in await thread_ids(saver):
            status, waiting = await status_of(saver, thread)
            if not status:
                continue
            state = ("done" if status["phase"] == "done" else "waiting for answers" if waiting
                     else "running" if thread_busy(db, thread) else "interrupted")
            updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(status["updated_at"]))
            rows.append((thread, updated, state, f"{status['round']}/{status['rounds']}", status["phase"],
                         str(status["turns"]), status["problem"][:60]))
    return rows


COMMANDS = {"run": run, "resume": resume, "show": show, "report": report, "list": list_debates}
"""The function behind each subcommand."""
