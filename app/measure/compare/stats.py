"""The statistics of a comparison, as pure functions over per-run records.

One protocol's accuracy gets a Wilson score interval with Brown, Cai and
DasGupta's correction at the edges: a percentile bootstrap of one proportion
covers far less than it claims at the task counts people use (64% of the time
for a "95%" interval at p=0.95 and 20 tasks) and gives 0/20 the empty [0, 0].
With several seeds the interval counts tasks, not runs, since a task's seeds are
not independent draws. A difference between two protocols gets a percentile
bootstrap that resamples whole tasks. McNemar's exact test pairs tasks, a task's
seeds combined first. Beside them: the flip matrix between each agent's first
and final answer, and the rate of confidently wrong consensus. Only the
standard library: a comparison must not need a statistics package.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

BOOTSTRAP_SEED = 21
BOOTSTRAP_SAMPLES = 2000
LEVEL = 0.95


def accuracy(correct: Sequence[bool], tasks: Sequence[str] | None = None) -> float:
    """Return the mean over tasks of each task's share of right runs (0 when there are none).

    It is the share ``accuracy_interval`` is the interval of: with as many seeds for every task it is
    the share of right runs, with fewer for some it weighs each task once, as the interval does.
    """
    if not correct:
        return 0.0
    shares = by_task([float(c) for c in correct], tasks or [str(i) for i in range(len(correct))])
    return sum(shares.values()) / len(shares)


def by_task(values: Sequence[float], tasks: Sequence[str]) -> dict[str, float]:
    """Each task's mean value over its seeds, in the order tasks first appear."""
    groups: dict[str, list[float]] = {}
    for task, value in zip(tasks, values, strict=True):
        groups.setdefault(task, []).append(float(value))
    return {task: sum(group) / len(group) for task, group in groups.items()}


def accuracy_interval(
    correct: Sequence[bool], tasks: Sequence[str] | None = None, level: float = LEVEL
) -> tuple[float, float]:
    """Return the Wilson interval of the accuracy, counting tasks rather than runs.

    A task's seeds are at most perfectly correlated, so the effective number of
    draws lies between the tasks and the runs: taking the tasks keeps the
    interval honest, if a little wide, whatever the correlation.
    """
    if not correct:
        return 0.0, 0.0
    shares = by_task([float(c) for c in correct], tasks or [str(i) for i in range(len(correct))])
    return wilson_interval(sum(shares.values()), len(shares), level)


def wilson_interval(successes: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Return the Wilson score interval of ``successes`` in ``n``, corrected within three of either edge.

    Plain Wilson covers only 85% near p=0.01 at n=20; Brown, Cai and DasGupta
    (2001) replace its bound for 1 to 3 successes (or failures) by the Poisson
    one, which holds the coverage above 91% for every p at n=20.
    """
    if n <= 0:
        return 0.0, 0.0
    z = NormalDist().inv_cdf((1 + level) / 2)
    share = successes / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    edge = 2 if n <= 50 else 3
    if successes <= 0:
        low = 0.0
    elif successes <= edge:
        low = min(low, poisson_lower(successes, 1 - level) / n)
    if successes >= n:
        high = 1.0
    elif n - successes <= edge:
        high = max(high, 1 - poisson_lower(n - successes, 1 - level) / n)
    return low, high


def poisson_lower(count: float, alpha: float) -> float:
    """Return the mean whose Poisson chance of ``count`` or more is ``alpha``: the one-sided lower bound.

    Solved by bisection on the regularized lower incomplete gamma function,
    P(X >= x) = P(x, mean) for a whole x, which also takes a task-averaged
    (fractional) count.
    """
    low, high = 0.0, count + 10 * math.sqrt(count) + 10
    for _ in range(100):
        middle = (low + high) / 2
        if _gamma_lower(count, middle) < alpha:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _gamma_lower(shape: float, x: float) -> float:
    """Return the regularized lower incomplete gamma function P(shape, x), by its power series."""
    if x <= 0:
        return 0.0
    term = total = 1 / shape
    k = 0
    while term > total * 1e-15:
        k += 1
        term *= x / (shape + k)
        total += term
    return min(1.0, total * math.exp(-x + shape * math.log(x) - math.lgamma(shape)))


def bootstrap_interval(
    values: Sequence[float],
    level: float = LEVEL,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
    tasks: Sequence[str] | None = None,
) -> tuple[float, float]:
    """Return the percentile bootstrap interval of the mean: the same data always gives the same interval.

    With ``tasks`` (each value's task), whole tasks are resampled: the seeds of
    one task are not independent draws, and treating them so would make the
    interval too narrow. It serves a difference between protocols (a value per
    task); one protocol's accuracy takes ``accuracy_interval``.
    """
    if not values:
        return 0.0, 0.0
    rng = random.Random(seed)
    groups: dict[str, list[float]] = {}
    for task, value in zip(tasks or [str(i) for i in range(len(values))], values, strict=True):
        groups.setdefault(task, []).append(float(value))
    sums = [(sum(g), len(g)) for g in groups.values()]
    means = [_cluster_mean(rng.choices(sums, k=len(sums))) for _ in range(samples)]
    return percentile_interval(means, level)


def percentile_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Return the central ``level`` share of ``values``: from the lower tail's edge to the upper tail's."""
    ordered, n = sorted(values), len(values)
    nudge = 1e-9  # (1 - 0.9) / 2 * 1000 is 49.999...: the 50th value, not the 49th
    low = ordered[int((1 - level) / 2 * n + nudge)]
    high = ordered[min(n - 1, int((1 + level) / 2 * n + nudge))]
    return low, high


def _cluster_mean(drawn: Sequence[tuple[float, int]]) -> float:
    return sum(total for total, _ in drawn) / max(1, sum(runs for _, runs in drawn))


def mcnemar(ours: Sequence[float], theirs: Sequence[float]) -> dict[str, Any]:
    """McNemar's exact test on pairs: wins (ours higher), losses (theirs higher), the two-sided p.

    A pair is one task's share of right runs on each side; with one seed a task
    is right or wrong and this is McNemar's test itself, with several it is the
    sign test of the tasks, which never counts a task's seeds as independent.
    """
    wins = sum(a > b for a, b in zip(ours, theirs, strict=True))
    losses = sum(b > a for a, b in zip(ours, theirs, strict=True))
    return {
        "wins": wins,
        "losses": losses,
        "p": binomial_two_sided(min(wins, losses), wins + losses),
    }


def binomial_two_sided(k: int, n: int) -> float:
    """P(X <= k or X >= n - k) for X ~ Binomial(n, 1/2), capped at 1: the exact test of a split."""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def majority_accuracy(p: float, k: int) -> float:
    """Return the chance that k independent answers, each right with probability p, vote the right one.

    More than half right wins; with an even k a tie is settled by a fair draw,
    so it wins half the time (the vote's tally breaks ties at random).
    """
    more = sum(math.comb(k, i) * p**i * (1 - p) ** (k - i) for i in range(k // 2 + 1, k + 1))
    tie = math.comb(k, k // 2) * (p * (1 - p)) ** (k // 2) if k % 2 == 0 else 0.0
    return more + tie / 2


def flip_matrix(pairs: Sequence[tuple[bool, bool]]) -> dict[str, int]:
    """Count (first answer right, final answer right) over every agent of every run."""
    names = {
        (False, True): "wrong_to_right",
        (True, False): "right_to_wrong",
        (True, True): "right_to_right",
        (False, False): "wrong_to_wrong",
    }
    counts = dict.fromkeys(names.values(), 0)
    for pair in pairs:
        counts[names[pair]] += 1
    return counts


def confidently_wrong(runs: Sequence[dict[str, Any]]) -> float:
    """Return the share of runs in which every agent ends on the same answer, and it is wrong."""
    if not runs:
        return 0.0
    return sum(bool(r["consensus"]) and not r["correct"] for r in runs) / len(runs)


def per_correct(total: float, correct: int) -> float | None:
    """Return what one right answer cost (None when there was none)."""
    return total / correct if correct else None
