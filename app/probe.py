"""The memory probe: plant facts in a debate, then measure where each one survives, round by round.

Tiers: the transcript (always all of it), the summary each agent's view points
to, the view as sent (a search of the exact prompt text, captured from the
model calls), and the judge's view at the end. Then a quiz: each agent answers
questions about the facts from its final view; an answer counts when it holds
the fact's exact value. On the ``fake`` model the quiz measures only whether
the value was in the prompt (the fake model repeats identifiers it sees).
"""

from __future__ import annotations

import random
import string
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

KEYS = ("shard key", "cache port", "retry budget", "region code", "queue name", "token bucket size",
        "lease timeout", "audit table", "canary share", "replica count", "index name", "rollout wave")


@dataclass(frozen=True)
class Fact:
    """One planted fact: a question's key and an unguessable value."""

    key: str
    value: str
    round: int

    @property
    def sentence(self) -> str:
        return f"The {self.key} is {self.value}."


def make_facts(count: int, rounds: list[int], seed: int = 7) -> list[Fact]:
    """``count`` distinct facts, spread over the planting rounds."""
    rng = random.Random(seed)
    facts = []
    for i in range(count):
        word = rng.choice(("tenant", "shard", "node", "zone", "lane", "slot"))
        value = f"{word}_{rng.randint(10, 99)}_{''.join(rng.choices(string.ascii_lowercase, k=5))}"
        key = KEYS[i % len(KEYS)] + (f" {i // len(KEYS) + 1}" if i >= len(KEYS) else "")
        facts.append(Fact(key=key, value=value, round=rounds[i % len(rounds)]))
    return facts


def briefings(facts: list[Fact]) -> dict[str, str]:
    """The briefing note of each planting round."""
    notes: dict[str, list[str]] = {}
    for fact in facts:
        notes.setdefault(str(fact.round), []).append(fact.sentence)
    return {r: "Facts to keep for the rest of the debate: " + " ".join(s) for r, s in notes.items()}


class PromptLog(BaseCallbackHandler):
    """Every prompt sent to a model, with the agent, phase and round of the call."""

    def __init__(self) -> None:
        self.prompts: list[dict[str, Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        meta = metadata or {}
        text = "\n".join(str(m.content) for batch in messages for m in batch)
        self.prompts.append({"agent_id": meta.get("agent_id"), "kind": meta.get("kind"),
                             "round": meta.get("round"), "text": text, "time": time.time()})


def contains(text: str, fact: Fact) -> bool:
    """A token search for the fact's exact value."""
    return fact.value in text.replace("\\_", "_")


def run_probe(context: Any, facts: list[Fact], protocol: str, emit: Any = None) -> dict[str, Any]:
    """Run the debate with the facts planted, capture every prompt, then measure and quiz."""
    import dataclasses

    from debate_engine.app.probe_measure import judge_share, quiz, rows
    from debate_engine.graph.builder import compile_debate
    from debate_engine.graph.roundtable import compile_roundtable

    context = dataclasses.replace(context, briefings=briefings(facts))
    graph = compile_roundtable() if protocol == "roundtable" else compile_debate()
    log = PromptLog()
    config: Any = {"configurable": {"thread_id": "probe"}, "callbacks": [log]}
    started = time.time()
    for mode, chunk in graph.stream({"problem": "Design a rate limiter for a public HTTP API."}, config,
                                    context=context, stream_mode=["custom", "values"]):
        if mode == "custom" and emit:
            emit(chunk)
    state = graph.get_state(config).values
    last = state["status"]["round"]
    step = max(1, state["settings"].get("roundtable", {}).get("summary_every", 1)) if protocol == "roundtable" else 1
    points = sorted({*range(min(f.round for f in facts), last + 1, step), last})
    return {
        "facts": len(facts), "plant": "briefing", "plant_rounds": sorted({f.round for f in facts}),
        "rows": rows(state, log.prompts, facts, points), "judge": judge_share(log.prompts, facts),
        "quiz": quiz(state, facts), "summaries": len(state["summary_log"]),
        "tokens": state["status"]["tokens"], "seconds": time.time() - started,
        "model": state["settings"]["judge"]["model"],
        "fact_list": [{"key": f.key, "value": f.value, "round": f.round} for f in facts],
    }
