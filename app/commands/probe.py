"""``debate probe``: measure what the memory keeps, for your own model and settings."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from debate_engine.app.errors import EXIT_OK, UserError


def register(sub: Any) -> None:
    probe = sub.add_parser("probe", help="plant facts in a debate and measure where the memory keeps them")
    probe.add_argument("--model", help="model for every agent and the judge")
    probe.add_argument("--agents", help="comma-separated roles")
    probe.add_argument("--protocol", choices=["phase", "roundtable"], default="phase")
    probe.add_argument("--rounds", type=int, default=6, help="rounds of the phase debate (default 6)")
    probe.add_argument("--turns", type=int, default=200, help="turns of the roundtable (default 200)")
    probe.add_argument("--facts", type=int, default=20, help="facts to plant (default 20)")
    probe.add_argument("--plant", choices=["briefing", "replies"], default="briefing",
                       help="briefing: a note every perspective includes (default); replies: the agents state them")
    probe.add_argument("--plant-rounds", default="1", help="rounds (or turns) that open with facts, e.g. 1,8")
    probe.add_argument("--context-window", type=int, help="context window in tokens")
    probe.add_argument("--max-output-tokens", type=int, help="tokens reserved for each answer")
    probe.add_argument("--summary-method", choices=["rolling", "fresh"], help="summary strategy")
    probe.add_argument("--output", help="write the results as JSON here")
    probe.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _plant_rounds(text: str) -> list[int]:
    try:
        rounds = sorted({int(r) for r in text.split(",") if r.strip()})
    except ValueError:
        raise UserError(f"--plant-rounds {text!r}: give round numbers separated by commas, e.g. 1,8") from None
    if not rounds or rounds[0] < 1:
        raise UserError(f"--plant-rounds {text!r}: rounds start at 1")
    return rounds


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.probe import run_probe
    from debate_engine.app.probe_facts import make_facts
    from debate_engine.app.probe_measure import render
    from debate_engine.app.progress import Progress
    from debate_engine.config.context import Context, RoundtableContext
    from debate_engine.config.resolve import resolve

    if not 1 <= args.facts <= 200:
        raise UserError(f"--facts {args.facts}: use a number from 1 to 200")
    rounds = _plant_rounds(args.plant_rounds)
    common = {"model": args.model or "", "agents": args.agents or "", "context_window": args.context_window,
              "max_output_tokens": args.max_output_tokens, "summary_method": args.summary_method or ""}
    if args.protocol == "roundtable":
        context: Any = RoundtableContext(**common, turns=args.turns)
        last = args.turns
    else:
        context = Context(**common, rounds=args.rounds)
        last = args.rounds
    if rounds[-1] > last:
        raise UserError(f"--plant-rounds: round {rounds[-1]} is after the last one ({last})")
    resolve(context)  # every settings mistake, before any call
    progress = Progress(args.quiet)
    result = run_probe(context, make_facts(args.facts, rounds), args.protocol, emit=progress.show,
                       plant=args.plant)
    sys.stdout.write(render(result))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return EXIT_OK
