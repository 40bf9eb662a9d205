"""Working context within a budget: the view each call is built from.

The budget is the model's context window minus the tokens reserved for its
answer, split after the seed design (2K system, 1K summary, 5K recent out of
8K) and scaled to the window. The view is system prompt + summary + the newest
turns verbatim + the task. Whatever does not fit is left out or shortened
visibly, and the finished prompt is counted again, so no call ever exceeds its
budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory.records import SummaryRecord, Turn, TurnView
from memory.tokens import count_messages, count_tokens, truncate_to_tokens

MIN_TAIL = 2
HISTORY_HEADER = "## Recent history, verbatim"


@dataclass(frozen=True)
class BudgetSplit:
    """Shares of the usable window; they need not sum to 1."""

    system: float = 2 / 8
    summary: float = 1 / 8
    recent: float = 5 / 8


@dataclass(frozen=True)
class Budget:
    """Token limits for one call."""

    total: int
    """Context window minus reserved output: the prompt may never exceed it."""
    system: int
    summary: int
    recent: int

    @property
    def history(self) -> int:
        """What summary and verbatim turns share: the base of trigger ratios."""
        return self.summary + self.recent


def make_budget(context_window: int, max_output_tokens: int, split: BudgetSplit = BudgetSplit()) -> Budget:
    """Scale the split to a model's window, keeping ``max_output_tokens`` free."""
    total = context_window - max_output_tokens
    if total < 64:
        raise ValueError(
            f"context window {context_window} leaves {total} tokens after reserving "
            f"{max_output_tokens} for output; lower max output tokens or use a larger window"
        )
    scale = sum((split.system, split.summary, split.recent))
    return Budget(
        total=total,
        system=int(total * split.system / scale),
        summary=int(total * split.summary / scale),
        recent=int(total * split.recent / scale),
    )


@dataclass(frozen=True)
class View:
    """A prompt ready to send, and the record of what it shows."""

    system: str
    user: str
    record: TurnView


Render = Callable[[Turn], str]


def render_turn(turn: Turn) -> str:
    """Render a turn as a headed block, the way every prompt shows history."""
    kind = turn["kind"]
    if kind == "critique":
        head = f"Critique by {turn['speaker']} of {turn['target']} (round {turn['round']})"
    elif kind == "clarification":
        head = f"Clarification asked by {turn['speaker']}"
    else:
        head = f"{kind.capitalize()} by {turn['speaker']} (round {turn['round']})"
    return f"### {head}\n{turn['content']}"


def build_view(
    *,
    system_prompt: str,
    task: str,
    summary: SummaryRecord | None,
    turns: Sequence[Turn],
    budget: Budget,
    render: Render = render_turn,
    min_tail: int = MIN_TAIL,
    max_turns: int | None = None,
) -> View:
    """Assemble a prompt from its parts within ``budget``, newest history first."""
    shortened = False
    system = system_prompt
    if count_tokens(system) > budget.system // 2:
        system, shortened = truncate_to_tokens(system, budget.system // 2), True
    task_limit = max(budget.system - count_tokens(system), budget.system // 4)
    if count_tokens(task) > task_limit:
        task, shortened = truncate_to_tokens(task, task_limit), True

    summary_block = ""
    if summary is not None:
        text = summary["text"]
        if count_tokens(text) > budget.summary:
            text, shortened = truncate_to_tokens(text, budget.summary), True
        summary_block = f"## Summary of your earlier history\n{text}"

    fixed = count_messages(system, _join(summary_block, HISTORY_HEADER, task))
    room = budget.total - fixed
    blocks: list[tuple[Turn, str]] = []
    newest = turns if max_turns is None else turns[len(turns) - max_turns :] if max_turns else []
    for turn in reversed(newest):
        block = render(turn)
        cost = count_tokens(block) + 2
        if cost > room:
            if len(blocks) >= min_tail or room < 48:
                break
            # A single huge turn: show its head and tail rather than nothing.
            block, shortened = truncate_to_tokens(block, room - 2), True
            cost = count_tokens(block) + 2
        blocks.append((turn, block))
        room -= cost
    blocks.reverse()

    while True:
        history = "\n\n".join(b for _, b in blocks)
        history_block = f"{HISTORY_HEADER}\n{history}" if history else ""
        user = _join(summary_block, history_block, task)
        tokens = count_messages(system, user)
        if tokens <= budget.total or not blocks:
            break
        if len(blocks) == 1:  # the last turn left: shorten it by the overshoot rather than drop it
            turn, block = blocks[0]
            limit = count_tokens(block) - (tokens - budget.total) - 2
            if limit > 32:
                blocks[0], shortened = (turn, truncate_to_tokens(block, limit)), True
                continue
        blocks.pop(0)
    if tokens > budget.total:
        user = truncate_to_tokens(user, budget.total - count_messages(system, ""))
        tokens, shortened = count_messages(system, user), True
    record = TurnView(
        summary_id=summary["id"] if summary else None,
        turn_ids=[t["id"] for t, _ in blocks],
        prompt_tokens=tokens,
        budget_tokens=budget.total,
        shortened=shortened,
    )
    return View(system=system, user=user, record=record)


def _join(summary_block: str, history_block: str, task: str) -> str:
    return "\n\n".join(p for p in (summary_block, history_block, f"## Your task\n{task}") if p)
