"""The probe's measurements: where each planted fact is, by round and tier, and the quiz."""

from __future__ import annotations

from statistics import mean
from typing import Any

from debate_engine.app.probe_facts import Fact, contains

MODEL_KINDS = ("proposal", "critique", "refinement", "message", "synthesis")


def _last_turn(transcript: list[dict[str, Any]], agent: str, upto_round: int) -> dict[str, Any] | None:
    found = None
    for turn in transcript:
        if turn["speaker"] == agent and turn["round"] <= upto_round and turn["kind"] in MODEL_KINDS:
            found = turn
    return found


def _prompt(prompts: list[dict[str, Any]], turn: dict[str, Any]) -> str:
    matching = [p["text"] for p in prompts if p["agent_id"] == turn["speaker"] and p["round"] == turn["round"]
                and p["kind"] == turn["kind"]]
    return matching[-1] if matching else ""


def _shares(values: dict[str, Any], prompts: list[dict[str, Any]], facts: list[Fact], agent: str,
            upto: int, lag: int) -> tuple[float, float, float] | None:
    """Shares of the planted facts in ``agent``'s summary and view as of ``upto``, and in the transcript.

    A fact counts from ``lag`` rounds after its planting round (1 when a reply plants it).
    """
    planted = [f for f in facts if f.round + lag <= upto]
    turn = _last_turn(values["transcript"], agent, upto)
    if not planted or turn is None or turn["round"] < max(f.round for f in planted) + lag:
        return None
    summaries = {s["id"]: s for s in values["summary_log"]}
    summary = summaries.get((turn["view"] or {}).get("summary_id") or "")
    summary_text = (summary["text"] + " " + " ".join(sum(summary["facets"].values(), []))) if summary else ""
    prompt = _prompt(prompts, turn)
    upto_text = " ".join(t["content"] for t in values["transcript"] if t["seq"] < turn["seq"])
    n = len(planted)
    return (sum(contains(upto_text, f) for f in planted) / n, sum(contains(summary_text, f) for f in planted) / n,
            sum(contains(prompt, f) for f in planted) / n)


def rows(values: dict[str, Any], prompts: list[dict[str, Any]], facts: list[Fact], points: list[int],
         lag: int = 0) -> list[dict]:
    """One row per round (or turn): each tier's share of the facts, minimum and mean over agents."""
    agents = [a["id"] for a in values["settings"]["agents"]]
    out = []
    for point in points:
        found = [s for a in agents if (s := _shares(values, prompts, facts, a, point, lag)) is not None]
        if not found:
            continue
        out.append({"round": point, "agents": len(found),
                    **{f"{tier}_{how}": round(fn([s[i] for s in found]), 3)
                       for i, tier in enumerate(("transcript", "summary", "view"))
                       for how, fn in (("min", min), ("mean", mean))}})
    return out


def judge_share(prompts: list[dict[str, Any]], facts: list[Fact]) -> float:
    """Share of the facts in the judge's synthesis prompt."""
    texts = [p["text"] for p in prompts if p["agent_id"] == "judge" and p["kind"] == "synthesis"]
    return sum(contains(texts[-1], f) for f in facts) / len(facts) if texts and facts else 0.0


def quiz(state: dict[str, Any], facts: list[Fact]) -> dict[str, float]:
    """Ask each agent about every fact from its final view; score exact values in its answer."""
    from debate_engine.calls import Request, ask
    from debate_engine.memory import latest_summaries, make_budget, working_view

    questions = "\n".join(f"{i + 1}. What is the {f.key}?" for i, f in enumerate(facts))
    task = f"Answer each question with the exact value, one line each:\n{questions}"
    scores = {}
    table = latest_summaries(state["summary_log"], ["table"]).get("table")
    for agent in state["settings"]["agents"]:
        summary = table or latest_summaries(state["summary_log"], [agent["id"]]).get(agent["id"])
        view = working_view(state["transcript"], agent["id"], summary, system_prompt=agent["system_prompt"],
                            task=task, budget=make_budget(agent["context_window"], agent["max_output_tokens"]))
        answer = ask(Request(
            models=(agent["model"], *agent["fallback_models"]), system=view.system, user=view.user, temperature=0.0,
            max_tokens=agent["max_output_tokens"], timeout_s=agent["timeout_s"],
            limit=state["settings"]["max_concurrency"], run="probe-quiz", who=agent["id"], tags=("probe", "quiz"),
        )).text
        scores[agent["id"]] = sum(contains(answer, f) for f in facts) / len(facts)
    return scores


def _tier_table(result: dict[str, Any]) -> list[str]:
    lines = ["| round | agents | transcript | summary (min / mean) | view as sent (min / mean) |", "|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['round']} | {r['agents']} | {r['transcript_mean']:.0%} | {r['summary_min']:.0%} / "
                     f"{r['summary_mean']:.0%} | {r['view_min']:.0%} / {r['view_mean']:.0%} |")
    return lines if result["rows"] else [*lines, "| no round to measure | | | | |"]


def render(result: dict[str, Any]) -> str:
    """The probe's report as Markdown."""
    lines = [f"# Memory probe: {result['facts']} facts planted ({result['plant']}) in rounds "
             f"{', '.join(map(str, result['plant_rounds']))}", ""]
    if result["plant"] == "replies":
        lines += [f"{result['landed']} of {result['facts']} facts landed (stated word for word in a reply of their "
                  "planting round); only those are measured, from the round after.", ""]
    lines += [*_tier_table(result), "", f"Judge's view at the synthesis: {result['judge']:.0%} of the facts.", ""]
    if result["quiz"]:
        lines += ["| agent | quiz accuracy |", "|---|---|"]
        lines += [f"| {agent} | {score:.0%} |" for agent, score in result["quiz"].items()]
    else:
        lines.append("No quiz: no fact landed.")
    lines += ["", f"Summaries: {result['summaries']}; tokens: {result['tokens']}; wall time: {result['seconds']:.1f} s."]
    if result["model"].startswith("fake"):
        lines.append("On the fake model the quiz shows only whether the value was in the prompt: it repeats what it sees.")
    return "\n".join(lines) + "\n"
