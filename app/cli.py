"""The ``debate`` command line: run, list, show and resume debates.

Exit codes: 0 done, 2 bad input or config, 3 provider failure, 4 summarizing
failed with ``abortOnFailure``, 130 interrupted. Every debate is checkpointed
in SQLite, so a failed or killed run keeps its turns and can be resumed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from debate_engine.graph.builder import compile_debate
from debate_engine.graph.config import ConfigError, resolve
from debate_engine.graph.context import Context
from debate_engine.providers.local_server import LocalModelError
from debate_engine.providers.factory import ModelConfigError, chat_model, redact
from debate_engine.app.persistence import StorageError, default_db, open_checkpointer, thread_ids
from debate_engine.app.report import export_state, render_report
from debate_engine.memory import is_transport_error
from debate_engine.nodes import SummarizationAborted, render_solution

EXIT_OK, EXIT_INPUT, EXIT_PROVIDER, EXIT_SUMMARY, EXIT_INTERRUPTED = 0, 2, 3, 4, 130


class UserError(Exception):
    """A mistake in the command line's input; exits 2 with its message."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="debate", description="Multi-agent debates on LangGraph.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a new debate")
    run.add_argument("problem", nargs="?", help="the problem to debate")
    run.add_argument("--problem-file", help="read the problem from this file")
    run.add_argument("--config", help="JSON config file (the seed schema)")
    run.add_argument("--agents", help="comma-separated roles, e.g. architect,security")
    run.add_argument("--rounds", type=int, help="number of rounds (>= 1)")
    run.add_argument(
        "--model", help="model for every agent and the judge (openai:..., openrouter:..., local:smollm2, fake)"
    )
    run.add_argument("--clarify", action="store_true", help="let agents ask clarifying questions first")
    run.add_argument("--thread-id", help="id to store the debate under (default: a new one)")
    run.add_argument("--max-output-tokens", type=int, help="tokens reserved for each answer")
    run.add_argument("--context-window", type=int, help="context window in tokens")
    run.add_argument("--summary-method", choices=["rolling", "fresh"], help="summary strategy")
    run.add_argument("--no-summary", action="store_true", help="never summarize")

    show = sub.add_parser("show", help="show a stored debate")
    show.add_argument("thread")
    resume = sub.add_parser("resume", help="continue an interrupted, failed or killed debate")
    resume.add_argument("thread")
    lst = sub.add_parser("list", help="list stored debates")

    for p in (run, show, resume):
        p.add_argument("--output", help="write the final state as JSON here")
        p.add_argument("--report", help="write a Markdown report here")
    for p in (run, show, resume, lst):
        p.add_argument(
            "--db", default=None, help=f"checkpoint database: a path or postgresql://... (default {default_db()})"
        )
    for p in (run, resume):
        p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``debate`` console script."""
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    args = _parser().parse_args(argv)
    try:
        return {"run": _run, "resume": _resume, "show": _show, "list": _list}[args.command](args)
    except (UserError, ConfigError, ModelConfigError, StorageError) as exc:
        problems = getattr(exc, "problems", None) or [str(exc)]
        print(
            "error: " + "\n  ".join(["invalid input:", *problems] if len(problems) > 1 else problems), file=sys.stderr
        )
        return EXIT_INPUT
    except SummarizationAborted as exc:
        return _fail(EXIT_SUMMARY, str(exc), args)
    except LocalModelError as exc:
        return _fail(EXIT_PROVIDER, f"the embedded model failed: {exc}", args)
    except KeyboardInterrupt:
        return _fail(EXIT_INTERRUPTED, "interrupted", args)
    except Exception as exc:
        if _is_provider_error(exc):
            return _fail(EXIT_PROVIDER, f"the model provider failed: {type(exc).__name__}: {exc}", args)
        raise


def _is_provider_error(exc: BaseException) -> bool:
    names = {c.__module__.split(".")[0] for c in type(exc).__mro__}
    return is_transport_error(exc) or bool(names & {"openai", "httpx", "httpcore"})


def _fail(code: int, message: str, args: argparse.Namespace) -> int:
    thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
    hint = f"\nEvery finished turn is saved; continue with: debate resume {thread}" if thread else ""
    print(redact(f"error: {message}{hint}"), file=sys.stderr)
    return code


def _problem(args: argparse.Namespace) -> str:
    if args.problem_file:
        try:
            text = Path(args.problem_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read problem file {args.problem_file}: {exc.strerror or exc}") from None
    else:
        text = args.problem or ""
    if not text.strip():
        raise UserError("no problem given; pass it as an argument or with --problem-file FILE")
    return text.strip()


def _context(args: argparse.Namespace) -> Context:
    if args.config and not Path(args.config).is_file():
        raise UserError(f"config file {args.config} does not exist; check the path")
    context = Context(
        model=args.model or "",
        agents=args.agents or "",
        rounds=args.rounds,
        config_file=str(Path(args.config).resolve()) if args.config else "",
        clarify=args.clarify,
        max_output_tokens=args.max_output_tokens,
        context_window=args.context_window,
        summary_method=args.summary_method or "",
        summarize=False if args.no_summary else None,
    )
    plan = resolve(context)  # raises ConfigError listing every problem
    for profile in (*plan.agents, plan.judge):
        if not profile["model"].startswith("local"):
            chat_model(profile["model"])  # a missing API key is an input error, found before any call
    return context


def _run(args: argparse.Namespace) -> int:
    problem = _problem(args)
    context = _context(args)
    args.thread_id = args.thread_id or f"debate-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    with open_checkpointer(args.db or default_db()) as saver:
        graph = compile_debate(checkpointer=saver)
        config = _config(args.thread_id, context, started=time.time())
        if graph.get_state(config).values:
            raise UserError(
                f"thread {args.thread_id} already exists; use `debate resume {args.thread_id}` or another --thread-id"
            )
        print(f"debate {args.thread_id}", file=sys.stderr)
        values = _drive(graph, {"problem": problem}, config, context, args.quiet)
        return _finish(values, args)


def _resume(args: argparse.Namespace) -> int:
    with open_checkpointer(args.db or default_db()) as saver:
        graph = compile_debate(checkpointer=saver)
        base: RunnableConfig = {"configurable": {"thread_id": args.thread}}
        snapshot = graph.get_state(base)
        if not snapshot.values:
            raise UserError(f"no debate {args.thread!r} in {args.db or default_db()}; see `debate list`")
        saved = cast(dict[str, Any], (snapshot.metadata or {}).get("debate_context") or {})
        context = Context(**{k: v for k, v in saved.items() if k in Context.__dataclass_fields__})
        if not snapshot.next:
            print(f"debate {args.thread} is already finished", file=sys.stderr)
            return _finish(snapshot.values, args)
        started = cast(float, (snapshot.metadata or {}).get("started_at") or time.time())
        config = _config(args.thread, context, started=started)
        values = _drive(graph, None, config, context, args.quiet)
        return _finish(values, args)


def _config(thread: str, context: Context, started: float) -> RunnableConfig:
    plan = resolve(context)
    return {
        "configurable": {"thread_id": thread},
        "max_concurrency": plan.max_concurrency,
        "recursion_limit": 50 + 12 * plan.rounds,
        "metadata": {"debate_context": asdict(context), "started_at": started},
    }


def _drive(graph: Any, payload: Any, config: RunnableConfig, context: Context, quiet: bool) -> dict[str, Any]:
    """Stream the graph to the end, answering clarification interrupts at the terminal."""
    progress = Progress(quiet)
    while True:
        for mode, chunk in graph.stream(payload, config, context=context, stream_mode=["custom", "updates"]):
            if mode == "custom":
                progress.show(chunk)
        snapshot = graph.get_state(config)
        if not snapshot.interrupts:
            return snapshot.values
        payload = Command(resume=_ask(snapshot.interrupts[0].value))


def _ask(request: dict[str, Any]) -> dict[str, list[str]]:
    """Ask the user each agent's questions; without a terminal, answer nothing."""
    answers: dict[str, list[str]] = {}
    interactive = sys.stdin.isatty()
    if not interactive:
        print("clarifications: no terminal to ask; every question is recorded with no answer", file=sys.stderr)
    for entry in request.get("questions", []):
        answers[entry["agent_id"]] = []
        for question in entry["questions"]:
            reply = ""
            if interactive:
                print(f"[{entry['agent_id']}] {question}", file=sys.stderr)
                reply = input("> ").strip()
            answers[entry["agent_id"]].append(reply)
    return answers


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


def _show(args: argparse.Namespace) -> int:
    with open_checkpointer(args.db or default_db()) as saver:
        snapshot = compile_debate(checkpointer=saver).get_state({"configurable": {"thread_id": args.thread}})
    if not snapshot.values:
        raise UserError(f"no debate {args.thread!r}; see `debate list`")
    values = snapshot.values
    print(
        f"thread {args.thread}: {_status(snapshot)}, round {values.get('round', 0)}/{values.get('rounds', '?')}",
        file=sys.stderr,
    )
    return _finish(values, args)


def _status(snapshot: Any) -> str:
    if snapshot.interrupts:
        return "waiting for answers"
    if not snapshot.next:
        return "done" if snapshot.values.get("solution") else "empty"
    return "stopped (resumable)"


def _list(args: argparse.Namespace) -> int:
    with open_checkpointer(args.db or default_db()) as saver:
        graph = compile_debate(checkpointer=saver)
        rows = []
        for thread in thread_ids(saver):
            snapshot = graph.get_state({"configurable": {"thread_id": thread}})
            values, meta = snapshot.values, snapshot.metadata or {}
            started = cast(float | None, meta.get("started_at"))
            rows.append(
                (
                    thread,
                    time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "?",
                    _status(snapshot),
                    f"{values.get('round', 0)}/{values.get('rounds', '?')}",
                    (values.get("problem") or "").splitlines()[0][:60] if values.get("problem") else "",
                )
            )
    if not rows:
        print("no debates yet; start one with `debate run PROBLEM`", file=sys.stderr)
        return EXIT_OK
    print("thread\tstarted\tstatus\tround\tproblem")
    for row in rows:
        print("\t".join(row))
    return EXIT_OK


class Progress:
    """Live progress on stderr from the graph's custom stream events."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tokens = 0

    def show(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "contribution":
            self.tokens += event.get("tokens", 0) + event.get("prompt_tokens", 0)
        if self.quiet:
            return
        where = (
            f"[round {event.get('round', '-')}/{event.get('rounds', '-')}]"
            if "rounds" in event
            else f"[round {event.get('round', '-')}]"
        )
        if kind == "debate_started":
            line = f"agents: {', '.join(event['agents'])}; {event['rounds']} round(s)"
        elif kind == "phase_started":
            line = f"{where} {event['phase']}"
        elif kind == "contribution":
            on = f" on {event['target']}" if event.get("target") else ""
            secs = f" {event['latency_ms'] / 1000:.1f}s" if "latency_ms" in event else ""
            line = f"  {event['agent_id']}{on}: {event['kind']} done, {event['tokens']} tokens{secs} (tokens so far {self.tokens})"
        elif kind == "summarization_started":
            line = f"  {event['agent_id']}: summarizing {event['turns']} turns ({event['reason']})"
        elif kind == "summarization_completed":
            line = f"  {event['agent_id']}: summary {event['tokens_before']} -> {event['tokens_after']} tokens"
        elif kind == "summarization_error":
            line = f"  {event['agent_id']}: summary failed ({event['error']}); going on with the newest turns that fit"
        elif kind == "clarifications_requested":
            line = f"clarifying questions from {', '.join(event['agents'])}"
        else:
            return
        print(redact(line), file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
