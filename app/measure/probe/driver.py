"""The memory probe: plant facts in a debate, then measure where each one survives, round by round.

Tiers: the agent's own perspective (the turns it is entitled to, always kept),
the summary each turn's view points to, every prompt as sent (a search of the
exact prompt text, captured from the model calls), and the judge's view at the
end. Then a quiz: each agent answers questions about the facts from its final
view; an answer counts when it holds the fact's exact value. On the ``fake``
model the quiz measures only whether the value was in the prompt, and at most
as many facts as the fake model repeats identifiers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from debate_engine.app.measure.probe.facts import Fact, briefings, landed, reply_notes
from debate_engine.app.measure.probe.readings import (
    by_shape,
    fake_ceiling,
    judge_share,
    measure,
    prompt_shapes,
    quiz,
    turn_measures,
    windows,
)
from debate_engine.config.settled import Settled, settle
from debate_engine.graph.by_protocol import graph_for
from debate_engine.nodes.setup import begin

PROBLEM = "Design a rate limiter for a public HTTP API."
"""What the probe's debate is about, unless the user gives a problem of their own."""


def digest(text: str) -> str:
    """Return a prompt's short fingerprint: the probe names the worst prompt by it, a test finds it on a server."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class PromptLog(BaseCallbackHandler):
    """Every prompt sent to a model, with the agent, kind and round of the call."""

    def __init__(self) -> None:
        self.prompts: list[dict[str, Any]] = []

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any
    ) -> None:
        meta = metadata or {}
        for batch in messages:
            text = "\n".join(m.text for m in batch)  # the text of marked blocks too
            self.prompts.append(
                {
                    "agent_id": meta.get("agent_id"),
                    "kind": meta.get("kind"),
                    "round": meta.get("round"),
                    "text": text,
                    "digest": digest(text),
                }
            )


def run_probe(
    context: Any,
    facts: list[Fact],
    protocol: str,
    emit: Any = None,
    plant: str = "briefing",
    every: int = 10,
) -> dict[str, Any]:
    """Run the probe on an in-memory graph (see :func:`arun_probe`), its settings resolved with the facts."""
    graph = graph_for("roundtable" if protocol == "roundtable" else "phases", None)
    config: Any = {"configurable": {"thread_id": "probe"}}
    settled = settle(noted(context, facts, plant), credentials=False)
    return asyncio.run(
        arun_probe(graph, config, settled, facts, emit=emit, plant=plant, every=every)
    )


def noted(context: Any, facts: list[Fact], plant: str) -> Any:
    """Return the run's context with the facts planted: as briefing notes, or as notes asking replies to state them."""
    notes = (
        {"briefings": briefings(facts)}
        if plant == "briefing"
        else {"reply_notes": reply_notes(facts)}
    )
    return dataclasses.replace(context, **notes)


async def arun_probe(
    graph: Any,
    config: Any,
    settled: Settled,
    facts: list[Fact],
    *,
    emit: Any = None,
    plant: str = "briefing",
    every: int = 10,
    problem: str = PROBLEM,
) -> dict[str, Any]:
    """Run the debate with the facts planted, capture every prompt, then measure and quiz.

    ``briefing`` plants the facts as a note every perspective includes; ``replies``
    asks the debaters to state them, and only the facts a reply states are measured,
    from the round after (the reply itself is the fact's first appearance). ``settled`` holds the
    facts' notes (:func:`noted`).
    """
    await begin(graph, config, settled.intake(problem))
    log = PromptLog()
    config = {**config, "callbacks": [log]}
    started = time.time()
    async for mode, chunk in graph.astream(
        None, config, context=settled.context, stream_mode=["custom"]
    ):
        if mode == "custom" and emit:
            emit(chunk)
    state = (await graph.aget_state(config)).values
    measured = facts if plant == "briefing" else landed(state["transcript"], facts)
    lag = 0 if plant == "briefing" else 1
    roundtable = state["settings"].get("protocol") == "roundtable"
    prompts = measure(log.prompts, measured, lag)
    spend = state["spend"]["total"]
    return {
        "facts": len(facts),
        "plant": plant,
        "landed": len(measured),
        "protocol": "roundtable" if roundtable else "phases",
        "every": every if roundtable else 1,
        "plant_rounds": sorted({f.round for f in facts}),
        "rows": windows(state, prompts, turn_measures(state, measured, lag), measured, lag, every),
        "prompts": prompts,
        "judge": judge_share(log.prompts, measured),
        "judge_by_shape": by_shape(log.prompts, measured),
        "prompt_shapes": prompt_shapes(log.prompts, measured, lag),
        "quiz": await asyncio.to_thread(quiz, state, measured) if measured else {},
        "quiz_ceiling": fake_ceiling(state, len(measured)),
        "summaries": len(state["summary_log"]),
        "tokens": spend["input_tokens"] + spend["output_tokens"],
        "calls": spend["calls"],
        "seconds": time.time() - started,
        "model": state["settings"]["judge"]["model"],
        "fact_list": [
            {
                "key": f.key,
                "value": f.value,
                "round": f.round,
                "shape": f.shape,
                "speaker": f.speaker,
                "landed": f in measured,
            }
            for f in facts
        ],
        "summary_records": [
            {"id": s["id"], "text": s["text"], "facets": s["facets"]}
            for s in state["summary_log"]
            if s["status"] == "ok"
        ],
    }
