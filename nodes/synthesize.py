"""Synthesis: the judge turns the whole debate, through its summary and recent turns, into one solution.

The judge is told who debated and who left (an agent the debate went on without: ``nodes.dropped``), and
the solution's text says when its panel was partial.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from debate_engine.config.settings import RunSettings
from debate_engine.graph.state import ConversationState, Solution
from debate_engine.memory.facets import render_digest
from debate_engine.nodes.calls import Call, Reply, record_turns
from debate_engine.nodes.cap import left_for_judge
from debate_engine.nodes.panel import missing_of, named_with_error
from debate_engine.nodes.phase import phase_node
from debate_engine.nodes.solution import judge_schema
from debate_engine.nodes.status import advance, emit
from debate_engine.nodes.verdict import judge_note, merge_material, verdict
from debate_engine.nodes.views import (
    agent_call,
    capped_budget,
    reply_length,
    summaries_of,
    table_summary,
)
from debate_engine.prompts import load_prompt, render

SOLUTION_LISTS: tuple[
    tuple[str, Literal["key_decisions", "trade_offs", "recommendations", "open_risks", "cruxes"]],
    ...,
] = (
    ("Key decisions", "key_decisions"),
    ("Trade-offs", "trade_offs"),
    ("Recommendations", "recommendations"),
    ("Open risks", "open_risks"),
    ("Cruxes", "cruxes"),
)
"""The solution's lists as the Markdown text titles them, in order."""


def plan(state: ConversationState) -> list[Call]:
    """One structured call to the judge."""
    settings = state["settings"]
    judge = settings["judge"]
    emit(
        {
            "event": "phase_started",
            "phase": "synthesize",
            "round": state["round"],
            "rounds": settings["rounds"],
        }
    )
    budget = capped_budget(
        judge, left_for_judge(state)
    )  # under a spend cap: what is left, kept back for it
    schema = judge_schema(judge["max_output_tokens"])
    if settings.get("synthesis") == "merge" or settings.get("judge_history") == "final_round":
        # the final refinements only: no debate in the judge's view
        ask = render(
            load_prompt("phases/merge"),
            proposals=merge_material(state),
            positions=judge_note(state),
            length=reply_length(judge["max_output_tokens"]),
        )
        alone: ConversationState = {**state, "transcript": [], "summary_log": []}
        return [
            agent_call(
                alone,
                judge,
                None,
                kind="synthesis",
                round_no=state["round"],
                task=ask,
                schema=schema,
                budget=budget,
            )
        ]
    roundtable = settings.get("protocol") == "roundtable"
    summary = table_summary(state) if roundtable else summaries_of(state, [judge]).get(judge["id"])
    ask = render(
        load_prompt("phases/synthesize"),
        rounds=state["round"],
        participants=", ".join(f"{a['id']} ({a['role']})" for a in settings["agents"])
        + left_note(settings),
        summary_note=" and in the summary of its earlier part" if summary else "",
        recorded=recorded_note(state) + judge_note(state),
        length=reply_length(judge["max_output_tokens"]),
    )
    return [
        agent_call(
            state,
            judge,
            summary,
            kind="synthesis",
            round_no=state["round"],
            task=ask,
            schema=schema,
            budget=budget,
        )
    ]


def left_note(settings: RunSettings) -> str:
    """Return who left the debate, for the judge: their earlier turns are in its history, and are their last word."""
    return "".join(
        f"; {m['agent']} ({m['role']}) left in round {m['round']}, its model failing at {m['phase']}"
        for m in missing_of(settings)
    )


def recorded_note(state: ConversationState) -> str:
    """Return what every summary recorded, most referenced first: decisions that fell out of capped summaries stay seen."""
    digest = render_digest(state.get("facets") or {})
    return (
        f"\nRecorded across the debate's summaries, most referenced first:\n{digest}\n"
        if digest
        else ""
    )


def to_solution(reply: Reply) -> Solution:
    """Return the judge's reply as a solution; plain text when it gave no structure.

    Its short answer goes to the verdict, beside the agents' (``judge_answer``), not here.
    """
    if reply["parsed"] is not None:
        parsed = {k: v for k, v in reply["parsed"].items() if k != "answer"}
        # The judge's answer as its schema (``nodes.solution``) validated it: a solution's fields.
        return cast(Solution, {**parsed, "structured": True})
    return Solution(
        description=reply["content"],
        key_decisions=[],
        trade_offs=[],
        recommendations=[],
        open_risks=[],
        cruxes=[],
        confidence=0,
        confidence_reasons="The model gave no structured answer; no confidence was stated.",
        structured=False,
    )


def apply(state: ConversationState, calls: Sequence[Call], replies: list[Reply]) -> dict[str, Any]:
    """Record the solution and the synthesis turn; the debate is done."""
    solution = to_solution(replies[0])
    solution["verdict"] = verdict(state, replies[0]["parsed"])
    reply = Reply(**{**replies[0], "content": render_solution(solution)})
    turns = record_turns(state, calls, [reply])
    return {
        "solution": solution,
        "transcript": turns,
        "phase": "done",
        "status": advance(state, "done", state["round"], turns),
    }


def render_solution(solution: Solution) -> str:
    """Return the solution as Markdown text, for the transcript and the terminal."""
    parts = [solution["description"]]
    if (outcome := solution.get("verdict")) and (answer := outcome.get("judge_answer")):
        parts.append(f"Answer: {answer}")
    for title, key in SOLUTION_LISTS:
        items = solution.get(key) or []
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {i}" for i in items))
    if solution["structured"]:
        parts.append(f"Confidence: {solution['confidence']}/100. {solution['confidence_reasons']}")
    outcome = solution.get("verdict")
    panel = outcome.get("panel") if outcome else None
    if panel and panel["partial"]:
        missing = "; ".join(named_with_error(m) for m in panel["missing"])
        parts.append(f"Panel: {panel['partial']}; missing {missing}.")
    return "\n\n".join(parts)


synthesize = phase_node("synthesize", plan, apply)
