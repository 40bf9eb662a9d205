"""``debate run``: start a new debate and drive it to its end."""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.app.cli.outputs import (
    add_db,
    add_outputs,
    add_progress,
    check_outputs,
    db_of,
    finish,
    load_env_file,
)
from debate_engine.app.cli.run_context import problem_of, settled_from_args
from debate_engine.app.reports.record import record_of
from debate_engine.app.store.thread_ids import check_thread_id
from debate_engine.prompts import role_names

if TYPE_CHECKING:
    from debate_engine.config.settings import RunSettings
    from debate_engine.config.settled import Settled

MODEL_CHOICE = """how the model is chosen: --model for every agent and the judge; else each agent's "model" in
  --config; else $DEBATE_MODEL; else openai:gpt-4o-mini when OPENAI_API_KEY is set; else
  openrouter:openai/gpt-4o-mini when OPENROUTER_API_KEY is set; else local:smollm2, the embedded
  model (no key, no network; its server takes about 20 s to start)"""


def epilog() -> str:
    """Return the roles and how the model is chosen: what ``--agents`` and ``--model`` leave to the defaults."""
    return (
        f"roles: {', '.join(role_names())}\n  (in --config, an agent may bring its own prompt: "
        f"systemPromptPath)\n{MODEL_CHOICE}"
    )


def protocol(value: str) -> str:
    """``--protocol``: ``phases`` as the state, the JSON and the events name it; ``phase`` still accepted."""
    return "phases" if value == "phase" else value


def register(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run a new debate",
        description="Run a new debate: agents propose, critique "
        "and refine,\nround after round; then the judge synthesizes.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_options(run)
    run.add_argument(
        "--protocol",
        type=protocol,
        choices=["phases", "roundtable", "escalate"],
        default="phases",
        help="phases: propose, critique, refine per round (default; 'phase' also works); roundtable: "
        "one speaker per turn; escalate: the agents vote first, and debate only when they split",
    )
    # Dests of their own: `debate compare` passes its --votes (the vote's k) through the same context code.
    run.add_argument(
        "--votes",
        dest="escalate_votes",
        type=int,
        metavar="K",
        help="escalate: voters, odd (default 3)",
    )
    run.add_argument(
        "--window",
        dest="escalate_window",
        type=int,
        metavar="W",
        help="escalate: draw votes W at a time (default: all)",
    )
    run.add_argument("--turns", type=int, help="roundtable: most turns (1 to 10,000; default 100)")
    run.add_argument(
        "--order",
        choices=["round-robin", "moderator"],
        help="roundtable: who speaks next (default round-robin)",
    )
    run.add_argument(
        "--summary-every",
        type=int,
        help="roundtable: fold the oldest turns in every N turns (default 50)",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the projected tokens and cost; calls no model and needs no API key",
    )
    run.add_argument(
        "--human",
        action="append",
        metavar="NAME",
        help="seat a person called NAME beside the agents "
        "(repeatable); each of their turns shows its task and view here and reads the answer from "
        "stdin (ended by a line '.') or $EDITOR",
    )
    add_progress(run)
    add_outputs(run)
    add_db(run)


def add_run_options(run: argparse.ArgumentParser) -> None:
    """Add the problem and the run settings ``debate run`` and ``debate submit`` share."""
    run.add_argument("problem", nargs="?", help="the problem to debate")
    run.add_argument("--problem-file", help="read the problem from this file")
    run.add_argument("--config", help="JSON config file in the seed schema (default: none)")
    run.add_argument(
        "--agents",
        help="comma-separated roles, or ids/roles of the config's agents "
        "(default: the config's agents, else architect,performance,security)",
    )
    run.add_argument(
        "--rounds", type=int, help="number of rounds, 1 to 10,000 (default: the config's, else 3)"
    )
    run.add_argument(
        "--model",
        help="model for every agent and the judge: openai:NAME, openrouter:NAME, "
        "local:smollm2 or fake (default: see how the model is chosen, below)",
    )
    run.add_argument(
        "--clarify", action="store_true", help="let agents ask clarifying questions first"
    )
    run.add_argument(
        "--max-questions",
        type=int,
        help="with --clarify: most questions per agent, 0 to 20 (default: the config's, else 3)",
    )
    run.add_argument("--thread-id", help="id to store the debate under (default: a new one)")
    run.add_argument(
        "--max-output-tokens",
        type=int,
        help="tokens reserved for each answer (default: the "
        "config's, else 1024; 192 on the embedded model)",
    )
    run.add_argument(
        "--context-window",
        type=int,
        help="context window in tokens (default: the config's, else "
        "the model's known window, else 8192)",
    )
    run.add_argument(
        "--max-concurrency",
        type=int,
        help="most calls at once per provider (default: the "
        "config's, else no limit; the embedded model: one)",
    )
    run.add_argument(
        "--rpm",
        type=float,
        help="rate limit: most requests per minute to each model, shared by every run and process "
        "drawing on it (default: the config's rateLimits, else none)",
    )
    run.add_argument(
        "--tpm",
        type=float,
        help="rate limit: most tokens per minute to each model, prompt plus output allowance "
        "(default: the config's rateLimits, else none)",
    )
    run.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="each model's deadline for one answer, its "
        "retries included; a fallback model gets its own (default 120)",
    )
    run.add_argument(
        "--summary-method",
        choices=["rolling", "fresh"],
        help="summary strategy (default: the config's, else rolling)",
    )
    run.add_argument("--no-summary", action="store_true", help="never summarize")
    run.add_argument(
        "--anonymous",
        action="store_true",
        help="anonymous critiques: critiques, refinements and the judge see the other agents as "
        "Author A, B, C, never by id, role or model; the transcript keeps who wrote what "
        "(default: the config's debate.anonymous, else named)",
    )
    run.add_argument(
        "--max-tokens",
        type=int,
        help="spend cap: most prompt + completion tokens over every call "
        "(default: the config's, else none)",
    )
    run.add_argument(
        "--max-cost",
        type=float,
        help="spend cap in US dollars, priced with genai-prices (default: the config's, else none)",
    )
    run.add_argument(
        "--on-agent-failure",
        choices=["stop", "continue"],
        help="when an agent's call fails after every retry and fallback: stop the run, resumable "
        "(default: the config's onAgentFailure, else stop), or continue without that agent (its "
        "verdict then reads 'partial: 2 of 3 agents')",
    )


def main(args: argparse.Namespace) -> int:
    load_env_file(args.env_file)
    if args.thread_id is not None:  # a new debate's id, refused before anything is made
        check_thread_id(args.thread_id)
    problem = problem_of(args)
    check_outputs(args)
    settled = settled_from_args(args, credentials=not args.dry_run)
    if args.dry_run:
        from debate_engine.app.measure.estimate import (  # start-up: langgraph, dry runs only
            estimate,
            render_estimate,
        )

        if seats := settled.people:
            raise InputError(
                f"--dry-run cannot project a debate with a person at the table ({', '.join(seats)}): "
                "their turns wait for answers; leave --human (and human seats) out to project the "
                "agents' spend"
            )

        print(render_estimate(estimate(settled.context, settled.settings, problem)))
        return 0
    start_embedded_model(settled.settings)
    from debate_engine.app.cli.runner import (  # start-up: langgraph, while the model loads
        run_until_signal,
    )

    args.thread_id = (
        args.thread_id or f"debate-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    )
    return run_until_signal(_run(args, problem, settled))


def start_embedded_model(settings: RunSettings) -> None:
    """Start the embedded model's server now when a seat's model is it, settings checked, nothing else started yet.

    Its load (seconds) then overlaps the imports and the graph's build (about a second) instead of following them.
    """
    from debate_engine.config.settings import is_human  # start-up: langchain-core
    from debate_engine.providers.factory import provider_of  # start-up: asyncio, urllib
    from debate_engine.providers.local_server import start_server  # start-up: urllib, email

    seats = (*settings["agents"], settings["judge"])
    if any(provider_of(p["model"]) == "local" for p in seats if not is_human(p)):
        start_server()


async def _run(args: argparse.Namespace, problem: str, settled: Settled) -> int:
    from debate_engine.app.cli.progress import Progress  # start-up: langgraph
    from debate_engine.app.cli.runner import drive  # start-up: langgraph
    from debate_engine.app.store.database import (  # start-up: langgraph's checkpointers
        athread_lock,
        open_checkpointer,
    )
    from debate_engine.app.store.shared_limits import shared_limits  # start-up: langgraph
    from debate_engine.graph.by_protocol import graph_for  # start-up: the run settings' schema
    from debate_engine.nodes.setup import begin  # start-up: langgraph

    db = db_of(args)
    limits = shared_limits(db, args.thread_id, settled.settings)
    async with open_checkpointer(db) as saver, limits:
        graph = graph_for(settled.context, saver)
        config: Any = {"configurable": {"thread_id": args.thread_id}}
        async with athread_lock(db, args.thread_id):
            if (await graph.aget_state(config)).values:
                raise InputError(
                    f"thread {args.thread_id} already holds a debate; use `debate resume "
                    f"{args.thread_id}` or another --thread-id"
                )
            if not args.quiet:
                print(f"debate {args.thread_id}", file=sys.stderr)
            progress = Progress(args.quiet, args.verbose)
            try:
                # checkpointed before setup: a stop anywhere resumes with them, never resolved again
                await begin(graph, config, settled.intake(problem))
                snapshot = await drive(graph, None, config, settled.context, progress)
            finally:
                progress.close()
    try:
        return finish(record_of(snapshot.values), args)
    finally:
        progress.finish(snapshot.values)
