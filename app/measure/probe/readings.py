"""The probe's measurements: where each planted fact is, prompt by prompt and turn by turn, and the quiz.

Every prompt a debater was sent is searched (not one per agent per round): a
round's critiques can hold what its refinements lost. Rows then give the
minimum and the mean over the prompts of a round (in the roundtable, of a run
of turns), and the worst prompt by name.
"""

from __future__ import annotations

from statistics import mean
from typing import Any

from debate_engine.app.measure.probe.facts import Fact, contains
from debate_engine.app.reports.words import counted
from debate_engine.calls.road import Request, ask
from debate_engine.memory import latest_summaries, working_view
from debate_engine.memory.perspective import sees
from debate_engine.nodes.views import budget_of

DEBATER_KINDS = ("proposal", "critique", "refinement", "message")
"""The prompts measured: the debaters' turns (not summaries, not the judge's, not the quiz's)."""
FAKE_REPEATS = 5
"""Identifiers the ``fake`` model repeats from a prompt at most (``providers.fake``): a ceiling on its quiz."""


def _planted(facts: list[Fact], round_no: int, lag: int) -> list[Fact]:
    """Return the facts a call of ``round_no`` should hold: planted ``lag`` rounds before it or earlier."""
    return [f for f in facts if f.round + lag <= round_no]


def measure(prompts: list[dict[str, Any]], facts: list[Fact], lag: int = 0) -> list[dict[str, Any]]:
    """Each debater prompt as sent, with how many of the facts planted by its round it holds."""
    out = []
    for p in prompts:
        planted = _planted(facts, p["round"] or 0, lag) if p["kind"] in DEBATER_KINDS else []
        if planted:
            found = sum(contains(p["text"], f) for f in planted)
            out.append(
                {
                    "agent": p["agent_id"],
                    "kind": p["kind"],
                    "round": p["round"],
                    "planted": len(planted),
                    "found": found,
                    "share": found / len(planted),
                    "digest": p["digest"],
                }
            )
    return out


def _summary_text(summary: dict[str, Any] | None) -> str:
    return (
        (summary["text"] + " " + " ".join(sum(summary["facets"].values(), []))) if summary else ""
    )


def _share(text: str, facts: list[Fact]) -> float:
    return sum(contains(text, f) for f in facts) / len(facts)


def turn_measures(values: dict[str, Any], facts: list[Fact], lag: int = 0) -> list[dict[str, Any]]:
    """Each debater turn: the facts' share in its speaker's own perspective before it, and in its summary.

    The perspective is the rule of ``memory.perspective`` (shared briefings, the agent's own proposals and
    the critiques aimed at it; in the roundtable every turn): what the memory may keep for that agent.
    """
    agents = [a["id"] for a in values["settings"]["agents"]]
    held: dict[str, set[str]] = {a: set() for a in agents}
    summaries = {s["id"]: s for s in values["summary_log"]}
    out = []
    for turn in values["transcript"]:
        planted = _planted(facts, turn["round"], lag) if turn["kind"] in DEBATER_KINDS else []
        if planted and turn["speaker"] in held:
            record = summaries.get((turn["view"] or {}).get("summary_id") or "")
            idents = " ".join((record or {}).get("facets", {}).get("identifiers") or [])
            out.append(
                {
                    "agent": turn["speaker"],
                    "round": turn["round"],
                    "perspective": sum(f.value in held[turn["speaker"]] for f in planted)
                    / len(planted),
                    "summary": _share(_summary_text(record), planted),
                    "identifiers": _share(idents, planted),
                    "narrative": _share((record or {}).get("narrative", ""), planted),
                }
            )
        said = {f.value for f in facts if contains(turn["content"], f)}
        for viewer in agents:
            if said and sees(turn, viewer):
                held[viewer] |= said
    return out


def _spans(
    values: dict[str, Any], facts: list[Fact], lag: int, every: int
) -> list[tuple[int, int, str]]:
    """Return the rows: each round; in the roundtable each run of ``every`` turns, and the first turn after each
    planting and after each summary, on its own."""
    last = values["status"]["round"]
    if values["settings"].get("protocol") != "roundtable":
        return [(r, r, "") for r in range(1, last + 1)]
    spans = [(a, min(a + every - 1, last), "") for a in range(1, last + 1, every)]
    spans += [
        (f.round + lag, f.round + lag, "after planting") for f in facts if f.round + lag <= last
    ]
    spans += [
        (s["round"], s["round"], "after a summary")
        for s in values["summary_log"]
        if s["status"] == "ok" and s["round"] <= last
    ]
    return sorted(set(spans))


def _stats(name: str, shares: list[float]) -> dict[str, float]:
    return {f"{name}_min": round(min(shares), 3), f"{name}_mean": round(mean(shares), 3)}


def windows(
    values: dict[str, Any],
    prompts: list[dict[str, Any]],
    turns: list[dict[str, Any]],
    facts: list[Fact],
    lag: int = 0,
    every: int = 10,
) -> list[dict[str, Any]]:
    """One row per round (or run of turns): each tier's minimum and mean over its prompts, and the worst."""
    rows = []
    for first, last, why in _spans(values, facts, lag, max(1, every)):
        sent = [p for p in prompts if first <= p["round"] <= last]
        made = [t for t in turns if first <= t["round"] <= last]
        if not sent or not made:
            continue
        worst = min(sent, key=lambda p: (p["share"], p["round"]))
        rows.append(
            {
                "round": first,
                "until": last,
                "why": why,
                "agents": len({p["agent"] for p in sent}),
                "prompts": len(sent),
                **_stats("view", [p["share"] for p in sent]),
                **_stats("summary", [t["summary"] for t in made]),
                **_stats("identifiers", [t["identifiers"] for t in made]),
                **_stats("narrative", [t["narrative"] for t in made]),
                **_stats(
                    "transcript", [t["perspective"] for t in made]
                ),  # the speaker's own part of it
                "worst": {k: worst[k] for k in ("agent", "kind", "round", "share", "digest")},
            }
        )
    return rows


def judge_share(prompts: list[dict[str, Any]], facts: list[Fact]) -> float:
    """Share of the facts in the judge's synthesis prompt."""
    texts = [p["text"] for p in prompts if p["agent_id"] == "judge" and p["kind"] == "synthesis"]
    return sum(contains(texts[-1], f) for f in facts) / len(facts) if texts and facts else 0.0


def by_shape(prompts: list[dict[str, Any]], facts: list[Fact]) -> dict[str, float]:
    """Return the judge's share per fact shape: plain words rest on the summaries, the others on the lifter too."""
    shapes = dict.fromkeys(f.shape for f in facts)
    return {s: judge_share(prompts, [f for f in facts if f.shape == s]) for s in shapes}


def prompt_shapes(
    prompts: list[dict[str, Any]], facts: list[Fact], lag: int = 0
) -> dict[str, float]:
    """Return the worst debater prompt's share per fact shape."""
    out: dict[str, float] = {}
    for shape in dict.fromkeys(f.shape for f in facts):
        shaped = [f for f in facts if f.shape == shape]
        rows = measure(prompts, shaped, lag)
        out[shape] = min((r["share"] for r in rows), default=1.0)
    return out


def fake_ceiling(values: dict[str, Any], facts: int) -> float | None:
    """Return the best quiz score the ``fake`` model can reach (it repeats a few identifiers); None on a real model."""
    if not facts or not all(a["model"].startswith("fake") for a in values["settings"]["agents"]):
        return None
    return min(1.0, FAKE_REPEATS / facts)


def quiz(state: dict[str, Any], facts: list[Fact]) -> dict[str, float]:
    """Ask each agent about every fact from its final view; score exact values in its answer."""
    questions = "\n".join(f"{i + 1}. What is the {f.key}?" for i, f in enumerate(facts))
    task = f"Answer each question with the exact value, one line each:\n{questions}"
    scores = {}
    table = latest_summaries(state["summary_log"], ["table"]).get("table")
    for agent in state["settings"]["agents"]:
        summary = table or latest_summaries(state["summary_log"], [agent["id"]]).get(agent["id"])
        view = working_view(
            state["transcript"],
            agent["id"],
            summary,
            system_prompt=agent["system_prompt"],
            task=task,
            budget=budget_of(agent),
        )
        answer = ask(
            Request(
                models=(agent["model"], *agent["fallback_models"]),
                system=view.system,
                user=view.user,
                temperature=0.0,
                max_tokens=agent["max_output_tokens"],
                timeout_s=agent["timeout_s"],
                limit=state["settings"]["max_concurrency"],
                run="probe-quiz",
                who=agent["id"],
                tags=("probe", "quiz"),
            )
        ).text
        scores[agent["id"]] = sum(contains(answer, f) for f in facts) / len(facts)
    return scores


def _pct(row: dict[str, Any], tier: str) -> str:
    return f"{row[f'{tier}_min']:.0%} / {row[f'{tier}_mean']:.0%}"


def _tier_table(result: dict[str, Any]) -> list[str]:
    unit = "turns" if result.get("protocol") == "roundtable" else "round"
    lines = [
        f"| {unit} | agents | prompts | transcript: own perspective (min / mean) | summary (min / mean) "
        "| its identifiers facet | its narrative | prompts as sent (min / mean) | worst prompt |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        span = f"{r['round']}" if r["round"] == r["until"] else f"{r['round']}-{r['until']}"
        why = f" ({r['why']})" if r["why"] else ""
        worst = r["worst"]
        lines.append(
            f"| {span}{why} | {r['agents']} | {r['prompts']} | {_pct(r, 'transcript')} "
            f"| {_pct(r, 'summary')} | {_pct(r, 'identifiers')} | {_pct(r, 'narrative')} "
            f"| {_pct(r, 'view')} | {worst['agent']}'s {worst['kind']} of "
            f"{'turn' if unit == 'turns' else 'round'} {worst['round']}: {worst['share']:.0%} |"
        )
    return lines if result["rows"] else [*lines, "| nothing to measure | | | | | | | | |"]


def _quiz(result: dict[str, Any]) -> list[str]:
    if not result["quiz"]:
        return ["No quiz: no fact landed."]
    lines = [
        "| agent | quiz accuracy |",
        "|---|---|",
        *[f"| {a} | {s:.0%} |" for a, s in result["quiz"].items()],
    ]
    ceiling = result.get("quiz_ceiling")
    if ceiling is not None:
        cap = (
            (
                f", and it repeats at most {FAKE_REPEATS} identifiers per answer: with {result['landed']} facts it "
                f"cannot score above {ceiling:.0%}"
            )
            if ceiling < 1
            else ""
        )
        lines += [
            "",
            f"On the fake model the quiz shows only whether the value was in the prompt (it repeats what "
            f"it sees){cap}.",
        ]
    return lines


SHAPE_NOTES = {
    "identifier": "kept by the lifter too",
    "number": "a bare number with its subject: kept by the lifter too",
    "name": "kept by the lifter too",
    "money": "kept by the lifter too",
    "words": "plain words: only the summaries keep them",
}


def _shape_table(result: dict[str, Any]) -> list[str]:
    """Per fact shape: the worst debater prompt and the judge's view."""
    shapes = result.get("prompt_shapes") or {}
    judge = result.get("judge_by_shape") or {}
    if not judge:
        return []
    lines = ["| fact shape | worst debater prompt | judge's view | |", "|---|---|---|---|"]
    for shape, share in judge.items():
        worst = f"{shapes[shape]:.0%}" if shape in shapes else "-"
        lines.append(f"| {shape} | {worst} | {share:.0%} | {SHAPE_NOTES.get(shape, '')} |")
    return [*lines, ""]


def render(result: dict[str, Any]) -> str:
    """Return the probe's report as Markdown."""
    unit = "turn" if result.get("protocol") == "roundtable" else "round"
    unit += "s" if len(result["plant_rounds"]) > 1 else ""
    lines = [
        f"# Memory probe: {counted(result['facts'], 'fact')} planted ({result['plant']}) in {unit} "
        f"{', '.join(map(str, result['plant_rounds']))}",
        "",
    ]
    if result["plant"] == "replies":
        lines += [
            f"{result['landed']} of {result['facts']} facts landed (stated word for word in a reply of their "
            "planting round); only those are measured, from the round after.",
            "",
        ]
    lines += [
        "Each row searches every prompt the debaters were sent in it for the facts planted by then; the own "
        "perspective is every turn the agent is entitled to see (nothing is lost there).",
        "",
    ]
    lines += [
        *_tier_table(result),
        "",
        f"Judge's view at the synthesis: {result['judge']:.0%} of the facts.",
        "",
        *_shape_table(result),
    ]
    lines += _quiz(result)
    lines += [
        "",
        f"Summaries: {result['summaries']}; model calls: {result.get('calls', '?')}; tokens: "
        f"{result['tokens']}; wall time: {result['seconds']:.1f} s.",
    ]
    return "\n".join(lines) + "\n"
