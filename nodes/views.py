"""Each agent's call, built from state: its budget, its latest summary, its working view.

In an anonymous debate (``settings["anonymous"]``) the view and the task of a debater's, a person's or the
judge's call name every other agent by a letter (``Author A``), shuffled per run, the same for every reader
(``memory.perspective.author_labels``): no id, role or model of another agent reaches the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from debate_engine.calls.ledger import Price
from debate_engine.config.settings import PERSON_TURN_ROLE, AgentProfile, RunSettings
from debate_engine.graph.state import ConversationState
from debate_engine.memory import (
    Budget,
    BudgetSplit,
    SummaryRecord,
    covered_until,
    latest_summaries,
    make_budget,
    working_view,
)
from debate_engine.memory.budget import MIN_TOTAL
from debate_engine.memory.perspective import Relabelled, author_labels
from debate_engine.memory.records import Turn, TurnKind
from debate_engine.nodes.calls import Call, run_key
from debate_engine.nodes.positions import POSITION_KINDS, contribution_schema
from debate_engine.nodes.schedule import TABLE_ID

DEBATER_KINDS = frozenset({"proposal", "critique", "refinement", "message"})
"""The turns the debaters write (a reply note never reaches the judge, the moderator or clarifications)."""
FRAMED_KINDS = DEBATER_KINDS | {"synthesis", "moderation"}
"""Calls whose prompt opens with the problem, right after the system prompt (the clarifying questions and the
assessments put it in their own task)."""
ANONYMOUS_KINDS = DEBATER_KINDS | {"clarification", "synthesis"}
"""The calls an anonymous debate shows the other agents by letter. The moderator and the assessments answer with
an agent's id (who speaks next, whose proposal is best), so they are shown the ids."""


def budget_of(profile: AgentProfile) -> Budget:
    """Return the token budget of one agent's calls, from the settings fixed at setup (the roundtable's own split)."""
    split = profile.get("view_split")
    if split:
        return make_budget(
            profile["context_window"],
            profile["max_output_tokens"],
            BudgetSplit(split["system"], split["summary"], split["recent"]),
        )
    return make_budget(profile["context_window"], profile["max_output_tokens"])


def capped_budget(profile: AgentProfile, prompt_tokens: int | None) -> Budget:
    """Return the agent's budget, shrunk to ``prompt_tokens`` when a spend cap leaves less (never below the minimum)."""
    budget = budget_of(profile)
    if prompt_tokens is None or prompt_tokens >= budget.total:
        return budget
    return make_budget(
        max(prompt_tokens, MIN_TOTAL) + profile["max_output_tokens"],
        profile["max_output_tokens"],
        BudgetSplit(**profile["view_split"]) if profile.get("view_split") else BudgetSplit(),
    )


def summaries_of(
    state: ConversationState, profiles: Sequence[AgentProfile]
) -> dict[str, SummaryRecord]:
    """Return the newest summary of each of ``profiles``."""
    return latest_summaries(state.get("summary_log", []), [p["id"] for p in profiles])


HEADING_TOKENS = 24
"""Output tokens kept for a reply's heading and the model's own framing, besides its words."""
TOKENS_PER_WORD = 4 / 3


def reply_words(max_output_tokens: int) -> int:
    """Words a reply may use: the output budget less the heading, with a fifth kept as margin."""
    return max(20, int((max_output_tokens - HEADING_TOKENS) * 0.8 / TOKENS_PER_WORD))


def reply_length(max_output_tokens: int) -> str:
    """Return the length every phase prompt states: words, and short sentences (which small models keep to better)."""
    words = reply_words(max_output_tokens)
    return f"Reply in at most {max(2, min(40, words // 30))} short sentences (under {words} words)."


def agent_call(
    state: ConversationState,
    profile: AgentProfile,
    summary: SummaryRecord | None,
    *,
    kind: TurnKind,
    round_no: int,
    task: str,
    target: str | None = None,
    schema: type[BaseModel] | None = None,
    budget: Budget | None = None,
) -> Call:
    """Build the budgeted prompt ``profile`` will answer for one turn (with the round's reply note, if any).

    The task is the prompt's last part, so an agent's calls of one phase differ only there.
    """
    transcript: Sequence[Turn] = state.get("transcript", [])
    viewer, shown_target = profile["id"], None
    labels = labels_for(state, profile) if kind in ANONYMOUS_KINDS else None
    if labels is not None:
        task = anonymized(task, labels, state["settings"])
        transcript, viewer = Relabelled(transcript, labels), labels.get(viewer, viewer)
        shown_target = labels.get(target, target) if target else None
    notes = state["settings"].get("reply_notes") or {}
    note = notes.get(f"{round_no}:{profile['id']}") or notes.get(str(round_no))
    if note and kind in DEBATER_KINDS:
        task = f"{task}\n\n{note}"
    if schema is None and kind in POSITION_KINDS:
        schema = contribution_schema(profile["max_output_tokens"])
    view = working_view(
        transcript,
        viewer,
        summary,
        system_prompt=profile["system_prompt"],
        task=task,
        budget=budget or budget_of(profile),
        problem=state.get("problem", "") if kind in FRAMED_KINDS else "",
    )
    return Call(
        agent=profile,
        kind=kind,
        round=round_no,
        target=target,
        system=view.system,
        user=view.user,
        view=view.record,
        limit=state["settings"]["max_concurrency"],
        schema=schema,
        unseen=None if view.complete else (covered_until(summary), view.record["from_seq"]),
        problem=state.get("problem", ""),
        prices=models_prices(state["settings"].get("prices") or {}, profile),
        shown_target=shown_target,
        rate_limits=state["settings"].get("rate_limits"),
    )


def labels_for(state: ConversationState, profile: AgentProfile) -> dict[str, str] | None:
    """Return the names ``profile`` is shown every author by in an anonymous debate (None: the debate is named).

    Seeded by the run's thread: a resumed run shows the same letters, another run (a fork too) others.
    """
    settings = state["settings"]
    if not settings.get("anonymous"):
        return None
    gone = [m["agent"] for m in settings.get("missing") or []]
    authors = [*(a["id"] for a in settings["agents"]), *gone]
    return author_labels(authors, profile["id"], run_key())


def anonymized(task: str, labels: Mapping[str, str], settings: RunSettings) -> str:
    """Return a task with every agent it names by id and role (``security (security)``, a critique's target, the
    judge's participants, a merge's proposals) or in a list of who holds a position (``- kiss, security: ...``)
    named by its label instead. What the agents wrote is left as they wrote it."""
    roles = {a["id"]: {a["role"], PERSON_TURN_ROLE} for a in settings["agents"]}
    roles |= {m["agent"]: {m["role"], PERSON_TURN_ROLE} for m in settings.get("missing") or []}
    for agent, label in labels.items():
        named = "|".join(re.escape(r) for r in sorted(roles.get(agent, {PERSON_TURN_ROLE})) if r)
        task = re.sub(rf"(?<![\w:.-]){re.escape(agent)} \((?:{named})\)", label, task)
    ids = "|".join(re.escape(a) for a in sorted(labels, key=len, reverse=True))
    holders = re.compile(rf"^- ((?:{ids})(?:, (?:{ids}))*):", re.MULTILINE)
    return holders.sub(lambda m: "- " + ", ".join(labels[a] for a in m[1].split(", ")) + ":", task)


def models_prices(prices: dict[str, Price], profile: AgentProfile) -> tuple[tuple[str, Price], ...]:
    """Return the prices of the models an agent's call may be answered by."""
    specs = (profile["model"], *profile.get("fallback_models", ()))
    return tuple((spec, prices[spec]) for spec in specs if spec in prices)


def table_summary(state: ConversationState) -> SummaryRecord | None:
    """Return the roundtable's shared summary: every speaker (and the judge) is shown it."""
    return latest_summaries(state.get("summary_log", []), [TABLE_ID]).get(TABLE_ID)


def latest_position(state: ConversationState, agent_id: str) -> int | None:
    """Return the ``seq`` of the agent's newest proposal or refinement, walking back only to it."""
    transcript = state.get("transcript", [])
    for i in range(len(transcript) - 1, -1, -1):
        turn = transcript[i]
        if turn["speaker"] == agent_id and turn["kind"] in ("proposal", "refinement"):
            return i
    return None
