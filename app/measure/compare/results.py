"""What a comparison found, per protocol: accuracy and its interval, cost per task and per right answer,
the paired test against ``vote``, and for the debates the flip matrix and confidently wrong consensus.

Runs that went on without an agent (``--on-agent-failure continue``: their verdict reads ``partial: 2 of
3 agents``) are scored as what the user got, and counted apart from the whole ones, so a reader sees how
much of a protocol's accuracy stood on partial panels."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

from debate_engine.app.measure.compare import stats

MULTI_TURN = ("escalate", "debate", "debate-vote", "debate-anon", "roundtable")
"""The protocols whose agents answer more than once: the only ones with flips."""


class ProtocolFigures(TypedDict):
    """One protocol's figures in a comparison: its table row, its point on the accuracy chart."""

    protocol: str
    label: str
    runs: int
    correct: int
    left_out: int
    accuracy: float
    interval: list[float]
    """The accuracy's 95% interval, low and high."""
    tokens_per_task: float
    cost_per_task: float
    tokens_per_correct: float | None
    cost_per_correct: float | None
    wall_s_per_task: float
    partial: dict[str, int]
    """The runs among ``runs`` that went on without some agents, and how many of them were right: ``runs``,
    ``correct`` (the whole runs are the others)."""
    vs_vote: NotRequired[dict[str, Any]]
    """The paired test against ``vote`` (every protocol but the vote)."""
    flips: NotRequired[dict[str, int]]
    """The multi-turn protocols' flip matrix and confidently wrong consensus."""
    confidently_wrong_consensus: NotRequired[float]
    escalated: NotRequired[dict[str, Any]]
    """``escalate``: the share of its runs whose vote split and went on to the debate, with its 95% interval."""


def summarise(
    protocol: str,
    label: str,
    runs: list[dict[str, Any]],
    baseline: list[dict[str, Any]] | None,
    planned: int | None = None,
) -> ProtocolFigures:
    """One protocol's figures from its scored runs; ``baseline`` is the vote's runs, paired by task.

    ``planned`` is the runs asked for (tasks times seeds): those a spend cap stopped or never
    started are left out, never scored, and counted as such.
    """
    correct, tasks = [bool(r["correct"]) for r in runs], [str(r["task"]) for r in runs]
    hits, tokens, cost = sum(correct), sum(r["tokens"] for r in runs), sum(r["cost"] for r in runs)
    low, high = stats.accuracy_interval(correct, tasks)
    n = len(runs) or 1
    found: ProtocolFigures = {
        "protocol": protocol,
        "label": label,
        "runs": len(runs),
        "correct": hits,
        "left_out": max(0, (planned or len(runs)) - len(runs)),
        "accuracy": stats.accuracy(correct, tasks),
        "interval": [low, high],
        "tokens_per_task": tokens / n,
        "cost_per_task": cost / n,
        "tokens_per_correct": stats.per_correct(tokens, hits),
        "cost_per_correct": stats.per_correct(cost, hits),
        "wall_s_per_task": sum(r["wall_s"] for r in runs) / n,
        "partial": {
            "runs": sum(bool(r.get("partial")) for r in runs),
            "correct": sum(bool(r.get("partial")) and bool(r["correct"]) for r in runs),
        },
    }
    if protocol == "escalate":
        split = [bool(r.get("escalated")) for r in runs]
        found["escalated"] = {
            "share": stats.accuracy(split, tasks),
            "interval": list(stats.accuracy_interval(split, tasks)),
        }
    if baseline is not None:
        found["vs_vote"] = versus(runs, baseline)
    if protocol in MULTI_TURN:
        found["flips"] = stats.flip_matrix(
            [(bool(a), bool(b)) for r in runs for a, b in r["flips"]]
        )
        found["confidently_wrong_consensus"] = stats.confidently_wrong(runs)
    return found


def versus(runs: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the protocol against the vote on the tasks both answered: McNemar's test and the difference.

    A task is one pair whatever its seeds: each side's seeds are combined into the task's share of
    right runs first, so repeating a task's result over seeds never makes it look surer.
    """
    ours = stats.by_task([float(r["correct"]) for r in runs], [str(r["task"]) for r in runs])
    theirs = stats.by_task(
        [float(r["correct"]) for r in baseline], [str(r["task"]) for r in baseline]
    )
    both = [task for task in ours if task in theirs]
    differences = [ours[task] - theirs[task] for task in both]
    low, high = stats.bootstrap_interval(differences, tasks=both)
    test = stats.mcnemar([ours[task] for task in both], [theirs[task] for task in both])
    return {
        **test,
        "paired": "tasks",
        "tasks": len(both),
        "difference": sum(differences) / len(both) if both else 0.0,
        "interval": [low, high],
    }


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


HEADER = (
    "| protocol | accuracy (95% CI) | tokens/task | $/task | tokens/correct | $/correct | s/task "
    "| vs vote by task (won/lost, p; difference, 95% CI) | flips w→r / r→w / r→r / w→w "
    "| confidently wrong consensus |"
)
METHOD = (
    "Accuracy intervals: Wilson score, corrected at the edges, counting tasks (a task's seeds "
    "are not independent draws). vs vote pairs tasks, a task's seeds combined first: McNemar's "
    "exact test of the tasks each protocol did better on, and the difference in accuracy with a "
    "bootstrap interval that resamples whole tasks."
)
"""How the figures were computed, printed under every table."""


def markdown(summaries: list[ProtocolFigures], title: str, notes: list[str] | None = None) -> str:
    """Return the comparison as a Markdown table, one row per protocol; how it was computed; ``notes``."""
    rows = [f"## {title}", "", HEADER, "|" + "---|" * 10, *(_row(s) for s in summaries)]
    return "\n".join([*rows, "", METHOD, *(notes or [])]) + "\n"


def _row(summary: ProtocolFigures) -> str:
    """One protocol's row of the table."""
    flips = summary.get("flips")
    consensus = summary.get("confidently_wrong_consensus")
    cells = [
        summary["label"] + _escalated(summary.get("escalated")),
        _accuracy(summary),
        _count(summary["tokens_per_task"]),
        _money(summary["cost_per_task"]),
        _count(summary["tokens_per_correct"]),
        _money(summary["cost_per_correct"]),
        f"{summary['wall_s_per_task']:.2f}",
        _versus(summary.get("vs_vote")),
        " / ".join(str(v) for v in flips.values()) if flips else "-",
        "-" if consensus is None else f"{consensus:.3f}",
    ]
    return "| " + " | ".join(cells) + " |"


def _escalated(found: dict[str, Any] | None) -> str:
    """`` (0.720 escalated, 0.628-0.796)``: the share of escalate's runs that went on to the debate."""
    if not found:
        return ""
    low, high = found["interval"]
    return f" ({found['share']:.3f} escalated, {low:.3f}-{high:.3f})"


def _accuracy(summary: ProtocolFigures) -> str:
    """``0.650 (0.433-0.819), 13/20``, how many of those runs were partial (right of them), and how many runs a
    spend cap left out."""
    low, high = summary["interval"]
    text = f"{summary['accuracy']:.3f} ({low:.3f}-{high:.3f})" if summary["runs"] else "-"
    text += f", {summary['correct']}/{summary['runs']}"
    partial = summary.get("partial") or {}
    if partial.get("runs"):
        text += f" ({partial['runs']} partial, {partial['correct']} right)"
    left_out = summary.get("left_out", 0)
    return text + (f"; {left_out} left out" if left_out else "")


def _versus(found: dict[str, Any] | None) -> str:
    """``3/1, p=0.625; +0.100 (-0.050 to +0.250)``: the tasks won and lost, and the difference."""
    if not found or not found["tasks"]:
        return "-"
    low, high = found["interval"]
    return (
        f"{found['wins']}/{found['losses']}, p={found['p']:.3g}; "
        f"{found['difference']:+.3f} ({low:+.3f} to {high:+.3f})"
    )
