"""Flat cost: orchestration time per round early against late in one long debate.

Two agents on ``fake:words=150`` with no latency, so a round's time is the
engine's own work: planning views, deciding and making summaries, reducing
state and writing checkpoints to SQLite. A round runs from its first
``phase_started`` event to the next round's (the last round ends when
``synthesize`` starts), so a summarize step is charged to the round before
the phase it prepares. Baseline: the mean of rounds 2-11 of the same run.
"""

from __future__ import annotations

from statistics import mean, median

from bench.common import TWO, Run, Runs, rounds_for, table, x

GOAL = 1.5
WINDOW = 10
WIDE = 100
SUPERSTEPS_PER_ROUND_HINT = "1,250 with 2 agents: critique, refine and a summarize step before each"


def round_times(run: Run) -> dict[int, float]:
    """Seconds per round, from the first ``phase_started`` of one round to the next round's."""
    first: dict[int, float] = {}
    end = None
    for at, phase, round_no in run.starts:
        if phase == "synthesize":
            end = at
        elif round_no not in first:
            first[round_no] = at
    ordered = sorted(first)
    out = {r: first[n] - first[r] for r, n in zip(ordered, ordered[1:], strict=False)}
    if end is not None and ordered:
        out[ordered[-1]] = end - first[ordered[-1]]
    return out


def windows(rounds: int, width: int) -> list[tuple[str, range]]:
    """Return the first ``width`` rounds after round 1 (the baseline), the middle ones, and the last ones."""
    middle = max(2, rounds // 2 - width // 2)
    return [
        (f"rounds 2-{1 + width} (baseline)", range(2, 2 + width)),
        (f"rounds {middle}-{middle + width - 1}", range(middle, middle + width)),
        (
            f"rounds {rounds - width + 1}-{rounds} (last {width})",
            range(rounds - width + 1, rounds + 1),
        ),
    ]


def window_rows(times: dict[int, float], rounds: int, width: int) -> list[list[str]]:
    """Mean, median and max per window, each as a ratio to the baseline window's mean and median."""
    spans = windows(rounds, width)
    first = [times[r] for r in spans[0][1]]
    rows = []
    for label, span in spans:
        values = [times[r] for r in span]
        rows.append(
            [
                label,
                f"{mean(values) * 1000:.1f}",
                f"{median(values) * 1000:.1f}",
                f"{max(values) * 1000:.1f}",
                x(mean(values) / mean(first)),
                x(median(values) / median(first)),
            ]
        )
    return rows


def bench_flat_cost(runs: Runs, turns: int) -> None:
    run = runs.get(TWO, rounds_for(turns))
    times = round_times(run)
    print(
        f"Two agents, fake:words=150, latency 0, {run.rounds:,} rounds, {run.turns:,} turns, "
        f"{len(run.values['summary_log']):,} summaries; SQLite checkpoints; stream_mode=custom.\n"
    )
    if run.rounds < 2 + 2 * WINDOW:
        print(f"(too few rounds for two windows of {WINDOW})\n")
        return
    rows = window_rows(times, run.rounds, WINDOW)
    if run.rounds >= 2 + 2 * WIDE:
        rows += window_rows(times, run.rounds, WIDE)
    table(
        [
            "rounds",
            "mean ms/round",
            "median ms/round",
            "max ms/round",
            "mean vs baseline",
            "median vs baseline",
        ],
        rows,
    )
    base = mean(times[r] for r in range(2, 2 + WINDOW))
    last = mean(times[r] for r in range(run.rounds - WINDOW + 1, run.rounds + 1))
    verdict = "met" if last / base <= GOAL else "MISSED"
    whole = mean(times[r] for r in range(2, run.rounds + 1))
    print(
        f"Last 10 rounds / rounds 2-11 (means): {x(last / base)} (goal within {GOAL}x: {verdict}). "
        f"Mean over rounds 2-{run.rounds}: {whole * 1000:.1f} ms ({x(whole / base)}). Ten rounds are about "
        f"a second, so a disk flush or a GC pass moves a 10-round mean; the {WIDE}-round rows are steadier.\n"
    )
    slow = sorted((r for r in times if r >= 2), key=lambda r: -times[r])[:3]
    print(
        "Slowest rounds: "
        + ", ".join(f"round {r} {times[r] * 1000:.0f} ms" for r in slow)
        + f". LangGraph writes a DeltaChannel snapshot of the whole logs every 5,000 supersteps "
        f"(about round {SUPERSTEPS_PER_ROUND_HINT}).\n"
    )
