"""What a comparison found, per protocol: accuracy and its interval, cost per task and per right answer,
the paired test against ``vote``, and for the debates the flip matrix and confidently wrong consensus."""

from __future__ import annotations

from typing import Any

from debate_engine.app.compare import stats

MULTI_TURN = ("debate", "debate-vote", "roundtable")
"""The protocols whose agents answer more than once: the only ones with flips."""


def summarise(protocol: str, label: str, runs: list[dict[str, Any]], baseline: list[dict[str, Any]] | None,
              ) -> dict[str, Any]:
    """One protocol's figures from its runs; ``baseline`` is the vote's runs, paired by task and seed."""
    correct = [bool(r["correct"]) for r in runs]
    hits, tokens, cost = sum(correct), sum(r["tokens"] for r in runs), sum(r["cost"] for r in runs)
    low, high = stats.bootstrap_interval(correct, tasks=[str(r["task"]) for r in runs])
    n = len(runs) or 1
    found: dict[str, Any] = {
        "protocol": protocol, "label": label, "runs": len(runs), "correct": hits,
        "accuracy": stats.accuracy(correct), "interval": [low, high],
        "tokens_per_task": tokens / n, "cost_per_task": cost / n,
        "tokens_per_correct": stats.per_correct(tokens, hits), "cost_per_correct": stats.per_correct(cost, hits),
        "wall_s_per_task": sum(r["wall_s"] for r in runs) / n,
    }
    if baseline is not None:
        theirs = {(r["task"], r["seed"]): bool(r["correct"]) for r in baseline}
        pairs = [(bool(r["correct"]), theirs[(r["task"], r["seed"])]) for r in runs if (r["task"], r["seed"]) in theirs]
        found["vs_vote"] = stats.mcnemar([a for a, _ in pairs], [b for _, b in pairs])
    if protocol in MULTI_TURN:
        found["flips"] = stats.flip_matrix([(bool(a), bool(b)) for r in runs for a, b in r["flips"]])
        found["confidently_wrong_consensus"] = stats.confidently_wrong(runs)
    return found


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


HEADER = ("| protocol | accuracy (95% CI) | tokens/task | $/task | tokens/correct | $/correct | s/task "
          "| vs vote (wins/losses, p) | flips w→r / r→w / r→r / w→w | confidently wrong consensus |")


def markdown(summaries: list[dict[str, Any]], title: str) -> str:
    """The comparison as a Markdown table, one row per protocol."""
    rows = [f"## {title}", "", HEADER, "|" + "---|" * 10]
    for s in summaries:
        low, high = s["interval"]
        versus = s.get("vs_vote")
        flips = s.get("flips")
        rows.append(" | ".join([
            f"| {s['label']}", f"{s['accuracy']:.3f} ({low:.3f}-{high:.3f}), {s['correct']}/{s['runs']}",
            _count(s["tokens_per_task"]), _money(s["cost_per_task"]), _count(s["tokens_per_correct"]),
            _money(s["cost_per_correct"]), f"{s['wall_s_per_task']:.2f}",
            f"{versus['wins']}/{versus['losses']}, p={versus['p']:.3g}" if versus else "-",
            " / ".join(str(v) for v in flips.values()) if flips else "-",
            f"{s['confidently_wrong_consensus']:.3f}" if "confidently_wrong_consensus" in s else "-",
        ]) + " |")
    return "\n".join(rows) + "\n"


def svg(summaries: list[dict[str, Any]], width: int = 560, height: int = 360) -> str:
    """Accuracy with its interval against tokens per task, one labelled point per protocol, as plain SVG."""
    left, right, top, bottom = 60, 20, 20, 50
    most = max([s["tokens_per_task"] for s in summaries] + [1.0]) * 1.1

    def x(tokens: float) -> float:
        return left + (width - left - right) * tokens / most

    def y(share: float) -> float:
        return top + (height - top - bottom) * (1 - share)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="12">', f'<line x1="{left}" y1="{y(0)}" x2="{width - right}" y2="{y(0)}" stroke="black"/>',
             f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(1)}" stroke="black"/>',
             f'<text x="{(width + left) / 2}" y="{height - 10}" text-anchor="middle">tokens per task</text>',
             f'<text x="15" y="{y(0.5)}" transform="rotate(-90 15 {y(0.5)})" text-anchor="middle">accuracy</text>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4}" text-anchor="end">{tick:.2f}</text>')
    for tick in (0.0, most / 2, most):
        parts.append(f'<text x="{x(tick)}" y="{y(0) + 16}" text-anchor="middle">{tick:,.0f}</text>')
    for s in summaries:
        px, (low, high) = x(s["tokens_per_task"]), s["interval"]
        parts += [f'<line x1="{px}" y1="{y(low)}" x2="{px}" y2="{y(high)}" stroke="steelblue" stroke-width="2"/>',
                  f'<circle cx="{px}" cy="{y(s["accuracy"])}" r="4" fill="steelblue"/>',
                  f'<text x="{px + 7}" y="{y(s["accuracy"]) - 6}">{_escape(s["label"])}</text>']
    return "\n".join([*parts, "</svg>"]) + "\n"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
