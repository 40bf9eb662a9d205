"""``debate compare`` against the theory (issue 32).

On the fake population, whose truth is known, a vote of k lands where the binomial majority says,
inside the interval the comparison reports. The runs go through the comparison's own machinery
(``run_protocol``, ``record_of``, ``summarise``) on an in-memory checkpointer: the SQLite file of
``debate compare`` adds a minute and nothing to the claim.
"""

from __future__ import annotations

import asyncio

import pytest

from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.execute import Comparison, run_protocol
from debate_engine.app.measure.compare.protocols import protocol
from debate_engine.app.measure.compare.stats import majority_accuracy
from debate_engine.app.measure.compare.tasks import builtin_tasks
from debate_engine.config.context import Context
from debate_engine.graph.sample import compile_sample

TASKS = 400

pytestmark = pytest.mark.integration  # 400 tasks a vote, about 10 s of CPU each: `make test`


@pytest.mark.parametrize(
    ("solve", "k", "expected"), [(0.6, 3, 0.648), (0.6, 5, 0.683), (0.8, 3, 0.896)]
)
def test_a_vote_of_k_lands_inside_its_interval_around_the_binomial_majority(
    solve: float, k: int, expected: float
) -> None:
    assert round(majority_accuracy(solve, k), 3) == expected
    comparison = Comparison(
        f"theory-{solve}-{k}", {"sample": compile_sample()}, jobs=16, quiet=True
    )
    chosen = protocol("vote", Context(model=f"fake:solve={solve}"), "generalist", k)
    runs = asyncio.run(
        run_protocol(comparison, chosen, builtin_tasks(f"builtin:arithmetic:{TASKS}"), 1)
    )
    vote = results.summarise("vote", chosen.label, runs, None, planned=TASKS)
    low, high = vote["interval"]
    assert vote["runs"] == TASKS and low <= majority_accuracy(solve, k) <= high, (
        vote["accuracy"],
        low,
        high,
    )
