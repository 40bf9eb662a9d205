"""Rate limits: throughput at the limit with 4 debates at once, and the requests wasted on 429s with and without
the shared limiter.

On a scaled clock: the loopback server (``tests/support/limited_server.py``) holds its model to a requests and a
tokens bucket per second, refilled continuously as providers' are, and answers 429 with ``Retry-After`` past
them. Four debates (2 agents, 2 rounds) run at once in this process, three ways:

- limited: the config's ``rateLimits`` state the server's limits; every request takes from the one limiter;
- read: no limits stated, but the server states its own in ``x-ratelimit-*`` headers, which the limiter adopts
  from the first answer on;
- unlimited: no limits stated; the road asks each 429 again after its ``Retry-After`` (the pause shared by the
  process's runs), as long as the deadline allows;
- apart: four ``debate run`` processes, each with the limits stated but its own database, so nothing is shared.

Throughput is the requests (or tokens, as the server counts them) the server let through per second, from the
first to the last, over the limit; the steady figure leaves out the first second's burst, which a full bucket
allows on top of the rate. Wasted: requests the server refused.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import PROBLEM, environment, table, x

DEBATES, ROUNDS = 4, 3
REQUESTS = {"rpm": 8, "tpm": 1_000_000}
"""The requests bind: 8 a second, tokens without limit."""
TOKENS = {"rpm": 1_000, "tpm": 3_000}
"""The tokens bind: 3,000 a second (each request counts its prompt and 128 tokens of allowance at arrival)."""


def _together(path: Path) -> tuple[float, int]:
    """Run the debates at once in this process; return the wall time and how many finished whole."""
    from debate_engine import Context, compile_debate
    from tests.support.limited_server import complete

    settings = Context(config_file=str(path), summarize=False)

    async def one(i: int) -> Any:
        cfg = {"configurable": {"thread_id": f"limits-{i}"}}
        return await compile_debate().ainvoke({"problem": PROBLEM}, cfg, context=settings)

    async def all_of() -> list[Any]:
        return await asyncio.gather(*(one(i) for i in range(DEBATES)), return_exceptions=True)

    began = time.perf_counter()
    results = asyncio.run(all_of())
    return time.perf_counter() - began, sum(
        isinstance(r, dict) and complete(r, 2, ROUNDS) for r in results
    )


def _apart(path: Path, folder: Path, base_url: str) -> tuple[float, int]:
    """Run the debates as processes of their own, each on its own database; return wall time and how many ended 0."""
    from tests.support.debate_cli import cli_env, debate_command

    env = cli_env(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-bench-limits")
    began = time.perf_counter()
    processes = [
        subprocess.Popen(
            [*debate_command(), "run", PROBLEM, "--config", str(path), "--no-summary", "--quiet"]
            + ["--db", str(folder / f"apart-{i}.sqlite"), "--timeout", "60"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(DEBATES)
    ]
    codes = [p.wait(timeout=300) for p in processes]
    return time.perf_counter() - began, codes.count(0)


def _measure(rates: dict[str, int], how: str, folder: Path) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from debate_engine.calls import limits
    from tests.support.limited_server import LimitedServer, debate_config

    limits.forget()
    stated = {"unlimited": None, "read": {}}.get(how, rates)
    path = debate_config(folder, stated, rounds=ROUNDS)
    with (
        LimitedServer(rates["rpm"], rates["tpm"], states_limits=how == "read") as server,
        environment(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench-limits"),
    ):
        wall, whole = _apart(path, folder, server.base_url) if how == "apart" else _together(path)
        admitted, used = list(server.admitted), list(server.used)
        refused = server.refused_total()
    limits.forget()
    return {"wall": wall, "whole": whole, "admitted": admitted, "used": used, "refused": refused}


def _rate(events: list[tuple[float, str, float]], tokens: bool, skip_s: float = 0.0) -> float:
    """Return requests (or tokens) per second, from the first event (after ``skip_s``) to the last."""
    start = events[0][0] + skip_s
    kept = [(t, c) for t, _, c in events if t >= start]
    if len(kept) < 2:
        return 0.0
    counted = sum(c for _, c in kept[1:]) if tokens else len(kept) - 1
    return counted / (kept[-1][0] - kept[0][0])


def bench_ratelimits() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp:
        folder = Path(tmp)
        rows = []
        for binding, rates, tokens in (("requests", REQUESTS, False), ("tokens", TOKENS, True)):
            limit = rates["tpm"] if tokens else rates["rpm"]
            for how in ("limited", "read", "unlimited", "apart"):
                got = _measure(rates, how, folder)
                admitted = got["used"] if tokens else got["admitted"]
                rows.append(
                    [
                        binding,
                        how,
                        f"{got['whole']}/{DEBATES}",
                        len(got["admitted"]),
                        got["refused"],
                        x(_rate(admitted, tokens) / limit),
                        x(_rate(admitted, tokens, skip_s=1.0) / limit),
                        f"{got['wall']:.1f}",
                    ]
                )
        table(
            [
                "limit that binds",
                "limiter",
                "debates whole",
                "requests let through",
                "requests refused (429)",
                "throughput / limit",
                "steady / limit",
                "wall s",
            ],
            rows,
        )
    print(
        f"{DEBATES} debates of 2 agents x {ROUNDS} rounds against {REQUESTS['rpm']} requests/s "
        f"(tokens free), then {TOKENS['tpm']:,} tokens/s (requests free); throughput counts the "
        "tokens as the server counts them once a request is answered (its prompt and the words written); steady leaves the first second out.\n"
    )
