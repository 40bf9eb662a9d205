"""Working context within a budget: the view each call is built from.

The budget is the model's context window minus the tokens reserved for its
answer, split after the seed design (2K system, 1K summary, 5K recent out of
8K) and scaled to the window. Whatever does not fit is left out or shortened
visibly, and the finished prompt is counted again, so no call ever exceeds its
budget.

The layout puts what changes least first, because providers bill a prompt's
repeated prefix at a discount (OpenAI caches prefixes of 1,024 tokens and more
in 128-token steps): the system prompt, then the problem, the user's
clarifications, the summary, the verbatim turns oldest first, and last the
task, the one part that differs between an agent's calls of one phase. What a
call is shown is chosen newest first; only where it is shown follows that order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from debate_engine.errors import InputError
from debate_engine.memory.facets import render_summary
from debate_engine.memory.records import SummaryRecord, Turn, TurnView
from debate_engine.memory.tokens import count_messages, count_tokens, truncate_to_tokens

PROBLEM_HEADER = "## Problem"
PINNED_HEADER = "## Clarifications from the user"
HISTORY_HEADER = "## Recent history, verbatim"
SUMMARY_HEADER = "## Summary of your earlier history"
TASK_HEADER = "## Your task"
TURN_OVERHEAD = 24
"""Upper bound of the tokens a turn's heading and separators add to its content."""
FRAME_OVERHEAD = 48
"""Headers and chat-template tokens around the parts of a prompt."""
MIN_TOTAL = 256


class BudgetError(InputError, ValueError):
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

    @property
    def summary_room(self) -> int:
        """The most a view shows of a summary: its own share and half the verbatim turns'.

        A summary the run paid for is shown whole, never cut: one longer than its share takes the room of the
        oldest verbatim turns (the triggers count it whole, so those turns are summarized in time), and a
        summary request's output allowance keeps every summary within this room.
        """
        return self.summary + self.recent // 2


def recent_room(budget: Budget, summary_tokens: int) -> int:
    """Tokens of verbatim turns every view is sure to show beside a summary of ``summary_tokens``.

    A summary is shown whole up to :attr:`Budget.summary_room`; what it takes beyond its own share comes out of
    the turns' share. The overflow trigger keeps the uncovered turns within this, so every view is whole.
    """
    return budget.recent - max(0, min(summary_tokens, budget.summary_room) - budget.summary)


def make_budget(
    context_window: int, max_output_tokens: int, split: BudgetSplit = BudgetSplit()
) -> Budget:
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
    """Return the line that introduces a turn in a prompt."""
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


SHORTENED_NOTE = "(Summary shortened to fit this prompt: identifiers first, the narrative cut.)"
"""What a view says in the one case it cannot show a summary whole: a summary made for a wider window than the
prompt now has (a spend cap shrinks the judge's)."""


def summary_text(summary: SummaryRecord, limit_tokens: int) -> tuple[str, bool]:
    """Return the summary as shown within ``limit_tokens``: whole when it fits, else identifiers first and saying so.

    Views give a summary all the room their window has (:attr:`Budget.summary_room`) and summaries are written
    within it, so only a summary made under a wider window than the prompt's is ever shortened here.
    """
    text = summary["text"]
    if count_tokens(text) <= limit_tokens:
        return text, False
    limit = limit_tokens - count_tokens(SHORTENED_NOTE) - 1
    chars = len(text)
    while chars > 80 and limit > 0:
        chars = int(chars * 0.85)
        text = render_summary(summary["narrative"], summary["facets"], chars)
        if count_tokens(text) <= limit:
            return f"{text}\n{SHORTENED_NOTE}", True
    return truncate_to_tokens(summary["text"], limit_tokens), True


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
    problem: str = ""
    """The debate's problem (the roundtable's topic), shown right after the system prompt; it never changes."""
    pinned: Sequence[Turn] = ()
    """Turns shown after the problem, oldest first, whether or not the summary covers them: the user's
    clarifications, which open the transcript. They are offered after ``newest_first`` (they are older than it),
    which must not hold them again."""
    summary_tokens: int | None = None
    """The summary's slot; None: the budget's room for a summary. A fold reads the previous summary whole
    through a wider one."""


@dataclass(frozen=True)
class _Fixed:
    """The parts of a prompt that do not depend on the history shown, each within its share."""

    system: str
    problem: str
    task: str
    summary: str
    shortened: bool


def _fixed_parts(req: ViewRequest) -> _Fixed:
    budget, shortened = req.budget, False
    system = req.system_prompt
    if count_tokens(system) > budget.system // 2:
        system, shortened = truncate_to_tokens(system, budget.system // 2), True
    problem, task = req.problem, req.task
    frame_limit = max(
        budget.system - count_tokens(system), budget.system // 4
    )  # the problem and the task share it
    header = count_tokens(f"{PROBLEM_HEADER}\n\n\n") if problem else 0
    if problem and header + count_tokens(problem) + count_tokens(task) > frame_limit:
        room = max(frame_limit - count_tokens(task), frame_limit // 2) - header
        if count_tokens(problem) > room:
            problem, shortened = truncate_to_tokens(problem, room), True
    task_limit = frame_limit - (header + count_tokens(problem) if problem else 0)
    if count_tokens(task) > task_limit:
        task, shortened = truncate_to_tokens(task, task_limit), True
    summary_block = ""
    if req.summary is not None:
        slot = budget.summary_room if req.summary_tokens is None else req.summary_tokens
        text, cut = summary_text(req.summary, slot)
        summary_block, shortened = f"{SUMMARY_HEADER}\n{text}", shortened or cut
    return _Fixed(
        system, f"{PROBLEM_HEADER}\n{problem}" if problem else "", task, summary_block, shortened
    )


@dataclass
class _Shown:
    """The turns a walk put in the prompt, newest first, with their rendered blocks."""

    turns: list[Turn]
    blocks: list[str]
    complete: bool = True
    shortened: bool = False


def _walk(req: ViewRequest, render: Render, room: int) -> _Shown:
    """Take turns newest first while they fit ``room``; a pinned turn the summary covers may be left out."""
    shown = _Shown([], [])
    for turn in chain(req.newest_first, reversed(req.pinned)):
        block = render(turn)
        cost = count_tokens(block) + 2
        if cost > room:
            if shown.blocks or room < 48:
                shown.complete = turn["seq"] < req.since
                break
            block, shown.shortened = (
                truncate_to_tokens(block, room - 2),
                True,
            )  # one huge turn: its head and tail
            cost = count_tokens(block) + 2
        shown.turns.append(turn)
        shown.blocks.append(block)
        room -= cost
    return shown


def build_view(req: ViewRequest, render: Render = render_turn) -> View:
    """Assemble a prompt within the budget, choosing history newest first; record what it shows."""
    fixed = _fixed_parts(req)
    pinned_header = PINNED_HEADER if req.pinned else ""
    room = req.budget.total - count_messages(
        fixed.system, _join(fixed.problem, pinned_header, fixed.summary, HISTORY_HEADER, fixed.task)
    )
    shown = _walk(req, render, room)
    from_seq = (
        req.since if shown.complete else (shown.turns[-1]["seq"] if shown.turns else req.to_seq)
    )
    pinned = {t["seq"] for t in req.pinned}
    blocks = list(zip(shown.turns, shown.blocks, strict=True))[::-1]
    user = _join(
        fixed.problem,
        _section(PINNED_HEADER, [b for t, b in blocks if t["seq"] in pinned]),
        fixed.summary,
        _section(HISTORY_HEADER, [b for t, b in blocks if t["seq"] not in pinned]),
        fixed.task,
    )
    tokens, shortened = count_messages(fixed.system, user), fixed.shortened or shown.shortened
    if (
        tokens > req.budget.total
    ):  # counting drift between parts and the whole: never send over budget
        user = truncate_to_tokens(user, req.budget.total - count_messages(fixed.system, ""))
        tokens, shortened = count_messages(fixed.system, user), True
    record = TurnView(
        summary_id=req.summary["id"] if req.summary else None,
        from_seq=from_seq,
        to_seq=req.to_seq,
        turns=sum(
            t["seq"] >= from_seq for t in shown.turns
        ),  # a pinned turn the summary covers is extra
        prompt_tokens=tokens,
        budget_tokens=req.budget.total,
        shortened=shortened,
    )
    return View(system=fixed.system, user=user, record=record, complete=shown.complete)


def _section(header: str, blocks: list[str]) -> str:
    return f"{header}\n" + "\n\n".join(blocks) if blocks else ""


def _join(problem: str, pinned: str, summary_block: str, history_block: str, task: str) -> str:
    """Return the user message in its fixed order: the most stable parts first, the task last."""
    parts = (problem, pinned, summary_block, history_block, f"{TASK_HEADER}\n{task}")
    return "\n\n".join(p for p in parts if p)
