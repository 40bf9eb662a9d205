"""Benchmarks (issue 8), printed as tables of ratios against baselines measured in the same process.

  concurrency   one critique phase of 4 agents (12 calls) against one call's latency
  storage       SQLite checkpoint bytes / raw transcript bytes, 3x10 and 2 agents at ~100, 1,000, 10,000 turns
  naive         a naive LangGraph transcript channel on SQLite beside ours at 100 and 1,000 turns
  flat_cost     time per round early against late in the longest debate
  listing       `debate list` on a small database against one holding the longest debate
  summary_cost  full history against fresh and rolling summaries at R rounds
  memory_tokens tokens per round keeping every fact, with the verbose oracle and with the fake model
  workers       40 debates on 1, 2 and 4 `debate worker` processes sharing one PostgreSQL, hand-over after a SIGKILL
  fork          the bytes a fork adds against the original's bytes up to round K plus the fork's new rounds
  positions     tokens with positions against the same debate without them; the judge's checks per round
  cache         prompt-cache hits by OpenAI's rule, 3 agents x 8 rounds of 200-word replies on the loopback server
  waves         sequential model steps and wall time at R = 2, 4, 8 on a 300 ms server, summaries firing
  viewer        `debate serve` in headless Chromium: first paint of a 10,000-turn roundtable and a 1,000-debate
                list against small ones; a live page's delay from a turn's record to its showing
  overhead      the engine's share of a round's wall time (no model request in flight) on a 2 s server
  escalate      escalate's tokens per task against vote-k and the debate on two mixed fake populations
  ratelimits    4 debates at once against a rate-limited loopback server: throughput at the limit, and the
                requests wasted on 429s with the shared limiter, without limits, and with one per process

Debates run on DEBATE_MODEL=fake. The 10,000-turn debate (2,500 rounds, about
4 minutes on 2 cores) is run once and reused by storage, flat_cost and listing;
--quick stops at ~100 turns. Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Runs, section, table

NAMES = [
    "concurrency",
    "storage",
    "naive",
    "flat_cost",
    "listing",
    "summary_cost",
    "memory_tokens",
    "roundtable",
    "startup",
    "workers",
    "cache",
    "compare",
    "fork",
    "positions",
    "waves",
    "viewer",
    "overhead",
    "ratelimits",
    "escalate",
]


def sizes(args: argparse.Namespace) -> list[int]:
    """Turn counts of the two-agent storage series; the last is the long debate the others reuse."""
    return [100] if args.quick else [100, 1_000, 10_000]


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only", choices=NAMES, action="append", help="run this benchmark (repeatable)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes only (~100 turns, R=5): seconds, not minutes",
    )
    parser.add_argument(
        "--rounds", help="summary_cost round counts, comma-separated (default 5,10,20)"
    )
    parser.add_argument("--keep", metavar="DIR", help="keep the benchmark databases in DIR")
    return parser.parse_args()


def bench(name: str) -> Any:
    """Return ``bench.<name>.bench_<name>``, imported only when chosen (a tree being compared may lack another's API)."""
    return getattr(importlib.import_module(f"bench.{name}"), f"bench_{name}")


def run_all(args: argparse.Namespace, folder: Path) -> list[tuple[str, float]]:
    chosen = args.only or NAMES
    runs, turns = Runs(folder), sizes(args)
    walls: list[tuple[str, float]] = []
    rounds = [int(r) for r in (args.rounds or ("5" if args.quick else "5,10,20")).split(",")]
    steps = {
        "concurrency": ("Concurrency", lambda: bench("concurrency")()),
        "storage": (
            "Storage: SQLite bytes / raw transcript bytes",
            lambda: bench("storage")(runs, turns),
        ),
        "naive": (
            "Naive LangGraph baseline beside ours",
            lambda: bench("naive")(runs, [t for t in turns if t <= 1_000]),
        ),
        "flat_cost": (
            "Flat cost: time per round, early vs late",
            lambda: bench("flat_cost")(runs, turns[-1]),
        ),
        "listing": (
            "`debate list`: small vs large database",
            lambda: bench("listing")(runs, turns[-1]),
        ),
        "summary_cost": (
            "Summary cost: full history vs fresh vs rolling",
            lambda: bench("summary_cost")(rounds),
        ),
        "memory_tokens": (
            "Memory tokens per round: the verbose oracle and the fake model, every fact kept",
            lambda: bench("memory_tokens")(args.quick),
        ),
        "roundtable": (
            "Roundtable: 3 agents, per-turn cost, storage, summaries, fidelity",
            lambda: bench("roundtable")(folder, 1_000 if args.quick else 10_000),
        ),
        "startup": ("A fast start and no waste", lambda: bench("startup")(folder)),
        "workers": (
            "Scale-out: 40 debates on 1, 2, 4 workers sharing PostgreSQL; hand-over after SIGKILL",
            lambda: bench("workers")(count=20 if args.quick else 40),
        ),
        "fork": (
            "Fork storage: bytes a fork adds / the original's up to round K + the new rounds",
            lambda: bench("fork")(
                folder, rounds=8 if args.quick else 40, at=4 if args.quick else 20
            ),
        ),
        "escalate": (
            "Escalate: tokens per task against vote-k and the debate, mixed populations",
            lambda: bench("escalate")(50 if args.quick else 200),
        ),
        "positions": (
            "Positions: tokens against the same debate without them; the judge's checks per round",
            lambda: bench("positions")(),
        ),
        "cache": (
            "Prompt caching: cache-hit share and billed-equivalent input tokens (OpenAI's rule)",
            lambda: bench("cache")(),
        ),
        "compare": (
            "`debate compare` overhead: single on the fake vs the fake in a loop",
            lambda: bench("compare")(folder),
        ),
        "waves": (
            "Summaries off the critical path: sequential model steps (waves) against 2R+2",
            lambda: bench("waves")(),
        ),
        "viewer": (
            "`debate serve`: first paint of big pages against small ones; the live page's delay",
            lambda: bench("viewer")(folder, args.quick),
        ),
        "overhead": (
            "Engine overhead: time with no model request in flight, per round, on a 2 s model",
            lambda: bench("overhead")(folder),
        ),
        "ratelimits": (
            "Rate limits: throughput at the limit; requests wasted on 429s, shared limiter or not",
            lambda: bench("ratelimits")(),
        ),
    }
    for name in NAMES:
        if name in chosen:
            title, step = steps[name]
            with section(title, walls):
                step()
    return walls


def main() -> None:
    args = parse()
    began = time.perf_counter()
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        walls = run_all(args, Path(args.keep))
    else:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            walls = run_all(args, Path(tmp))
    print("## Wall time per section\n")
    print("(a section that reuses a debate another section ran shows only its own extra work)\n")
    table(["section", "seconds"], [[title, f"{took:.1f}"] for title, took in walls])
    print(f"(benchmarks took {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
