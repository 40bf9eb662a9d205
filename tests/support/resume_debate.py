"""The debate the resume tests stop and resume: its team, how soon a stop must end it, its turn ids."""

from __future__ import annotations

AGENTS = ["architect", "performance", "security"]
ROUNDS = 2
TEAM = ["--agents", ",".join(AGENTS), "--rounds", str(ROUNDS), "--max-concurrency", "1"]
STOP_WAIT_S = 3.0
"""A stopped run must exit this soon after SIGINT/SIGTERM (it only has to cancel and close the database)."""


def _expected_ids() -> list[str]:
    """Return the whole debate's turn ids, in order, written out from the protocol (3 agents, 2 rounds)."""
    pairs = [(a, b) for a in AGENTS for b in AGENTS if a != b]
    ids = [f"proposal:r1:{a}" for a in AGENTS]
    for r in range(1, ROUNDS + 1):
        ids += [f"critique:r{r}:{a}->{b}" for a, b in pairs]
        ids += [f"refinement:r{r}:{a}" for a in AGENTS]
    return [*ids, f"synthesis:r{ROUNDS}:judge"]


EXPECTED_IDS = _expected_ids()
TOTAL = len(EXPECTED_IDS)  # 3 + 2 * (6 + 3) + 1 = 22 contributions
assert TOTAL == 22
