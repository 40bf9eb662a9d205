"""Working context within a budget: the view each call is built from.

The budget is the model's context window minus the tokens reserved for its
answer, split after the seed design (2K system, 1K summary, 5K recent out of
8K) and scaled to the window. The view is system prompt + summary + the newest
turns verbatim + the task. Whatever does not fit is left out or shortened
visibly, and the finished prompt is counted again, so no call ever exceeds its
budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from debate_engine.memory.facets import render_summary
from debate_engine.memory.records import SummaryRecord, Turn, TurnView
from debate_engine.memory.tokens import count_messages, count_tokens, truncate_to_tokens

HISTORY_HEADER = "## Recent history, verbatim"
SUMMARY_HEADER = "## Summary of your earlier history"
TURN_OVERHEAD = 24
"""Upper bound of the tokens a turn's heading and separators add to its content."""
FRAME_OVERHEAD = 48
"""Headers and chat-template tokens around the parts of a prompt."""
MIN_TOTAL = 256


class BudgetError(ValueError):
    """The window cannot hold a prompt after the output reserve; the message says what to change."""


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
    if total < MIN_TOTAL:
        raise BudgetError(
            f"a context window of {context_window} tokens leaves {total} for the prompt after reserving "
            f"{max_output_tokens} for output; the prompt needs at least {MIN_TOTAL}: lower the max output "
            "tokens or use a larger window"
        )
    scale = split.system + split.summary + split.recent
    system = int(total * split.system / scale)
    summary = int(total * split.summary / scale)
    recent = min(int(total * split.recent / scale), total - system - summary - FRAME_OVERHEAD)
    return Budget(total=total, system=system, summary=summary, recent=recent)


def turn_cost(turn: Turn) -> int:
    """Tokens a turn takes in a view, at most: its content, its heading (agent ids are free text) and separators."""
    return turn["tokens"] + max(TURN_OVERHEAD, count_tokens(heading(turn)) + 4)


@dataclass(frozen=True)
class View:
    """A prompt ready to send, and the record of what it shows."""

    system: str
    user: str
    record: TurnView
    complete: bool
    """True when every turn offered was shown: nothing of the perspective was left out."""


Render = Callable[[Turn], str]


def heading(turn: Turn) -> str:
    """The line that introduces a turn in a prompt."""
    kind = turn["kind"]
    if kind == "critique":
        return f"### Critique by {turn['speaker']} of {turn['target']} (round {turn['round']})"
    if kind == "clarification":
        return f"### Clarifications asked by {turn['speaker']}, answered by the user"
    if kind == "briefing":
        return "### Briefing from the organisers"
    if kind == "message":
        return f"### {turn['speaker']} (turn {turn['round']})"
    return f"### {kind.capitalize()} by {turn['speaker']} (round {turn['round']})"


def render_turn(turn: Turn) -> str:
    """Render a turn as a headed block, the way every prompt shows history."""
    return f"{heading(turn)}\n{turn['content']}"


def summary_text(summary: SummaryRecord, limit_tokens: int) -> tuple[str, bool]:
    """The summary as shown within ``limit_tokens``: facets kept, the narrative shortened first."""
    text = summary["text"]
    if count_tokens(text) <= limit_tokens:
        return text, False
    chars = len(text)
    while chars > 80:
        chars = int(chars * 0.85)
        text = render_summary(summary["narrative"], summary["facets"], chars)
        if count_tokens(text) <= limit_tokens:
            return text, True
    return truncate_to_tokens(text, limit_tokens), True


@dataclass(frozen=True)
class ViewRequest:
    """The parts of one prompt: fixed text, and the history offered newest first."""

    system_prompt: str
    task: str
    summary: SummaryRecord | None
    newest_first: Iterable[Turn]
    since: int
    """The first ``seq`` the offered history may hold (what the summary does not cover)."""
    to_seq: int
    budget: Budget


def _fixed_parts(req: ViewRequest) -> tuple[str, str, str, bool]:
    budget, shortened = req.budget, False
    system = req.system_prompt
    if count_tokens(system) > budget.system // 2:
        system, shortened = truncate_to_tokens(system, budget.system // 2), True
    task = req.task
    task_limit = max(budget.system - count_tokens(system), budget.system // 4)
    if count_tokens(task) > task_limit:
        task, shortened = truncate_to_tokens(task, task_limit), True
    summary_block = ""
    if req.summary is not None:
        text, cut = summary_text(req.summary, budget.summary)
        summary_block, shortened = f"{SUMMARY_HEADER}\n{text}", shortened or cut
    return system, task, summary_block, shortened


def build_view(req: ViewRequest, render: Render = render_turn) -> View:
    """Assemble a prompt within the budget, newest history first; record what it shows."""
    system, task, summary_block, shortened = _fixed_parts(req)
    room = req.budget.total - count_messages(system, _join(summary_block, HISTORY_HEADER, task))
    blocks: list[str] = []
    oldest = req.to_seq
    complete = True
    for turn in req.newest_first:
        block = render(turn)
        cost = count_tokens(block) + 2
        if cost > room:
            if blocks or room < 48:
                complete = False
                break
            block, shortened = truncate_to_tokens(block, room - 2), True  # one huge turn: its head and tail
            cost = count_tokens(block) + 2
        blocks.append(block)
        oldest = turn["seq"]
        room -= cost
    blocks.reverse()
    history = "\n\n".join(blocks)
    user = _join(summary_block, f"{HISTORY_HEADER}\n{history}" if history else "", task)
    tokens = count_messages(system, user)
    if tokens > req.budget.total:  # counting drift between parts and the whole: never send over budget
        user = truncate_to_tokens(user, req.budget.total - count_messages(system, ""))
        tokens, shortened = count_messages(system, user), True
    record = TurnView(
        summary_id=req.summary["id"] if req.summary else None,
        from_seq=req.since if complete else oldest,
        to_seq=req.to_seq,
        turns=len(blocks),
        prompt_tokens=tokens,
        budget_tokens=req.budget.total,
        shortened=shortened,
    )
    return View(system=system, user=user, record=record, complete=complete)


def _join(summary_block: str, history_block: str, task: str) -> str:
    return "\n\n".join(p for p in (summary_block, history_block, f"## Your task\n{task}") if p)
