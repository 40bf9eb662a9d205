"""The memory probe: plant facts in a debate, then measure where each one survives, round by round.

Tiers: the transcript (always all of it), the summary each agent's view points
to, the view as sent (a search of the exact prompt text, captured from the
model calls), and the judge's view at the end. Then a quiz: each agent answers
questions about the facts from its final view; an answer counts when it holds
the fact's exact value. On the ``fake`` model the quiz measures only whether
the value was in the prompt (the fake model repeats identifiers it sees).
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from debate_engine.app.probe_facts import Fact, briefings, landed, reply_notes
from debate_engine.app.probe_measure import judge_share, quiz, rows


class PromptLog(BaseCallbackHandler):
    """Every prompt sent to a model, with the agent, phase and round of the call."""

    def __init__(self) -> None:
        self.prompts: list[dict[str, Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        meta = metadata or {}
        text = "\n".join(str(m.content) for batch in messages for m in batch)
        self.prompts.append({"agent_id": meta.get("agent_id"), "kind": meta.get("kind"),
                             "round": meta.get("round"), "text": text, "time": time.time()})


def run_probe(context: Any, facts: list[Fact], protocol: str, emit: Any = None,
              plant: str = "briefing") -> dict[str, Any]:
    """Run the debate with the facts planted, capture every prompt, then measure and quiz.

    ``briefing`` plants the facts as a note every perspective includes; ``replies``
    asks the debaters to state them, and only the facts a reply states are measured,
    from the round after (the reply itself is the fact's first appearance).
    """
    import dataclasses

    from debate_engine.graph.builder import compile_debate
    from debate_engine.graph.roundtable import compile_roundtable

    notes = {"briefings": briefings(facts)} if plant == "briefing" else {"reply_notes": reply_notes(facts)}
    context = dataclasses.replace(context, **notes)
    graph = compile_roundtable() if protocol == "roundtable" else compile_debate()
    log = PromptLog()
    config: Any = {"configurable": {"thread_id": "probe"}, "callbacks": [log]}
    started = time.time()
    for mode, chunk in graph.stream({"problem": "Design a rate limiter for a public HTTP API."}, config,
                                    context=context, stream_mode=["custom", "values"]):
        if mode == "custom" and emit:
            emit(chunk)
    state = graph.get_state(config).values
    measured = facts if plant == "briefing" else landed(state["transcript"], facts)
    lag = 0 if plant == "briefing" else 1
    last = state["status"]["round"]
    step = max(1, state["settings"].get("roundtable", {}).get("summary_every", 1)) if protocol == "roundtable" else 1
    first = min((f.round for f in measured), default=last) + lag
    points = sorted({*range(first, last + 1, step), last}) if measured and first <= last else []
    return {
        "facts": len(facts), "plant": plant, "landed": len(measured),
        "plant_rounds": sorted({f.round for f in facts}),
        "rows": rows(state, log.prompts, measured, points, lag), "judge": judge_share(log.prompts, measured),
        "quiz": quiz(state, measured) if measured else {}, "summaries": len(state["summary_log"]),
        "tokens": state["status"]["tokens"], "seconds": time.time() - started,
        "model": state["settings"]["judge"]["model"],
        "fact_list": [{"key": f.key, "value": f.value, "round": f.round, "landed": f in measured} for f in facts],
    }
