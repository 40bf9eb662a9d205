"""The judge's structured solution: its fields, sized so that the whole answer fits the judge's budget.

Apart from the synthesis node, because the spend cap sizes the judge's share by this schema's tool definition
(``nodes.cap``) before any synthesis runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import create_model, model_validator

from debate_engine.calls.schemas import (
    CHARS_PER_TOKEN,
    Bounded,
    chars_for,
    list_field,
    percent_field,
    text_field,
)

LISTS = {
    "key_decisions": "The main design decisions and why.",
    "trade_offs": "What the solution gives up, and for what.",
    "recommendations": "Concrete next steps.",
    "open_risks": "Risks that remain open.",
    "cruxes": "The points the agents still dispute at the end.",
}


class Judged(Bounded):
    """The judge's solution as read: a server without a grammar may leave the short answer out."""

    @model_validator(mode="before")
    @classmethod
    def _answer_optional_on_read(cls, data: Any) -> Any:
        """Read a missing ``answer`` as none stated; the schema sent still requires it."""
        return {"answer": "", **data} if isinstance(data, dict) else data


@lru_cache(maxsize=32)
def judge_schema(max_output_tokens: int) -> type[Bounded]:
    """Return the judge's solution, every field required and sized so the whole answer fits its budget.

    ``answer`` is the judge's own short answer, bounded as a debater's is (``nodes/positions.py``):
    without it a judged debate could only be scored by the agents' plurality, like a vote.
    """
    count = min(5, max(1, max_output_tokens // 160))
    item = min(300, max(16, int(max_output_tokens * 0.4 * CHARS_PER_TOKEN / (len(LISTS) * count))))
    fields = dict(
        description=text_field(
            "The solution, complete enough to build from.",
            chars_for(max_output_tokens, 0.25, floor=24),
        ),
        **{name: list_field(what, count, item) for name, what in LISTS.items()},
        confidence=percent_field("Confidence in the solution."),
        confidence_reasons=text_field(
            "Why this confidence: what supports it, what undermines it.",
            chars_for(max_output_tokens, 0.08, floor=16),
        ),
        answer=text_field(
            "The solution's short answer when the problem has one (a number, a choice, a word), "
            "else empty.",
            min(80, chars_for(max_output_tokens, 0.05, floor=12)),
        ),
    )
    # As in ``calls.schemas.answer_schema``: the fields go in as the untyped mapping pydantic reads.
    definitions: dict[str, Any] = fields
    return create_model(
        "JudgeSolution", __base__=Judged, __doc__="The judge's synthesized solution.", **definitions
    )


JudgeSolution = judge_schema(1024)
"""The judge's schema at the default output budget (each call uses its own judge's budget)."""
