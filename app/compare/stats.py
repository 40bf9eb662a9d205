"""The statistics of a comparison, as pure functions over per-run records.

Accuracy with a seeded percentile bootstrap (over tasks, each with its seeds
together), McNemar's exact test on paired runs (a run is a task and a seed:
with several seeds its p is a little optimistic, and the report says so), the flip matrix between each agent's
first and final answer, and the rate of confidently wrong consensus. Only
the standard library: a comparison must not need a statistics package.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

BOOTSTRAP_SEED = 21
BOOTSTRAP_SAMPLES = 2000


def accuracy(correct: Sequence[bool]) -> float:
    """The share of right answers (0 when there are none)."""
    return sum(correct) / len(correct) if correct else 0.0


def bootstrap_interval(correct: Sequence[bool], level: float = 0.95, samples: int = BOOTSTRAP_SAMPLES,
                       seed: int = BOOTSTRAP_SEED, tasks: Sequence[str] | None = None) -> tuple[float, float]:
    """The percentile bootstrap interval of the accuracy: the same data always gives the same interval.

    With ``tasks`` (each run's task), whole tasks are resampled: the seeds of one task are not independent
    draws, and treating them so would make the interval too narrow.
    """
    if not correct:
        return 0.0, 0.0
    rng, n = random.Random(seed), len(correct)
    if tasks is not None and len(set(tasks)) < n:
        groups: dict[str, list[bool]] = {}
        for task, right in zip(tasks, correct, strict=True):
            groups.setdefault(task, []).append(right)
        sums = [(sum(g), len(g)) for g in groups.values()]
        means = sorted(_cluster_mean(rng.choices(sums, k=len(sums))) for _ in range(samples))
    else:  # one run a task: resampling runs and counting the right ones is a binomial draw of n
        rate = sum(correct) / n
        means = sorted(sum(rng.random() < rate for _ in range(n)) / n for _ in range(samples))
    low = means[int((1 - level) / 2 * samples)]
    high = means[min(samples - 1, int((1 + level) / 2 * samples))]
    return low, high


def _cluster_mean(drawn: Sequence[tuple[int, int]]) -> float:
    return sum(hits for hits, _ in drawn) / max(1, sum(runs for _, runs in drawn))


def mcnemar(ours: Sequence[bool], theirs: Sequence[bool]) -> dict[str, Any]:
    """McNemar's exact test on paired runs: wins (we right, they wrong), losses, and the two-sided p."""
    wins = sum(a and not b for a, b in zip(ours, theirs, strict=True))
    losses = sum(b and not a for a, b in zip(ours, theirs, strict=True))
    return {"wins": wins, "losses": losses, "p": binomial_two_sided(min(wins, losses), wins + losses)}


def binomial_two_sided(k: int, n: int) -> float:
    """P(X <= k or X >= n - k) for X ~ Binomial(n, 1/2), capped at 1: the exact test of a split."""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def majority_accuracy(p: float, k: int) -> float:
    """The chance that more than half of k independent answers, each right with probability p, are right."""
    return sum(math.comb(k, i) * p**i * (1 - p) ** (k - i) for i in range(k // 2 + 1, k + 1))


def flip_matrix(pairs: Sequence[tuple[bool, bool]]) -> dict[str, int]:
    """Counts of (first answer right, final answer right) over every agent of every run."""
    names = {(False, True): "wrong_to_right", (True, False): "right_to_wrong",
             (True, True): "right_to_right", (False, False): "wrong_to_wrong"}
    counts = dict.fromkeys(names.values(), 0)
    for pair in pairs:
        counts[names[pair]] += 1
    return counts


def confidently_wrong(runs: Sequence[dict[str, Any]]) -> float:
    """The share of runs in which every agent ends on the same answer, and it is wrong."""
    if not runs:
        return 0.0
    return sum(bool(r["consensus"]) and not r["correct"] for r in runs) / len(runs)


def per_correct(total: float, correct: int) -> float | None:
    """What one right answer cost (None when there was none)."""
    return total / correct if correct else None
