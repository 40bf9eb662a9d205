"""Fork a stored debate at the end of a round: a new thread that keeps the history up to there, then goes its own way.

The fork is LangGraph's own time travel, made into a new thread: the original's
checkpoint at the end of round K (turn K in the roundtable) is found in its
history, and its values are written to a fresh thread with ``aupdate_state``
as the node that ended the round, so the graph's own edges choose the next
step. The original thread is only read. Its logs are ``DeltaChannel``s, so the
fork's first checkpoint holds rounds 1..K once, and later checkpoints only
their own steps' writes.

The fork's figures are its own: its spend and its clock start at zero when it
is written, so its final line, its report and its spend cap count the calls it
makes and the time it runs. What the kept rounds cost stays in ``forked_from``,
shown apart.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from debate_engine.app.reports.figures import duration, timeline
from debate_engine.app.reports.record import RunRecord, record_of
from debate_engine.app.reports.words import counted
from debate_engine.calls.ledger import Tally, empty_spend, empty_tally
from debate_engine.config.context import context_of
from debate_engine.config.settings import RunSettings
from debate_engine.config.settled import settle
from debate_engine.config.wording import quoted
from debate_engine.errors import InputError
from debate_engine.graph.state import ForkOrigin
from debate_engine.nodes.positions import key_of

UNFORKABLE = ("protocol", "clarify", "max_questions")
"""Settings that act before round 1, which a fork keeps as it was: a fork that would change them is refused."""


@dataclass(frozen=True)
class Changes:
    """What a fork changes; None keeps the original's setting."""

    agents: str | None = None
    model: str | None = None
    judge_model: str | None = None
    rounds: int | None = None
    """Rounds in all (turns in the roundtable), the copied ones included."""
    config: str | None = None

    def label(self) -> str:
        """Return the changes as ``key=value`` words, as ``--variants`` spells them."""
        given = [(f.name.replace("_", "-"), getattr(self, f.name)) for f in fields(self)]
        return (
            " ".join(f"{key}={value}" for key, value in given if value is not None) or "(no change)"
        )

    def over(self, base: Changes) -> Changes:
        """Return these changes on top of ``base``: a variant over the command's own flags."""
        given = {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }
        return replace(base, **given)


def counter_of(values: Mapping[str, Any]) -> tuple[str, str]:
    """Return the node that ends a round and the channel that counts rounds: ``refine``/``round``, ``turn``/``turn_count``."""
    roundtable = (values.get("settings") or {}).get("protocol") == "roundtable"
    return ("turn", "turn_count") if roundtable else ("refine", "round")


async def fork_point(saver: Any, graph: Any, thread: str, round_no: int, db: str) -> Any:
    """Return the original's snapshot right after round ``round_no`` ended, before anything of the next round ran.

    The checkpoints are scanned through the saver, reading only their small
    channels (phase and round live in every checkpoint): loading each past
    state whole would replay the transcript once per checkpoint. Only the
    thread's current debate counts (an earlier one on the same thread ends
    at its setup), and the first checkpoint of the round's end is taken: a
    summary made after it belongs to the next round.
    """
    config: Any = {"configurable": {"thread_id": thread}}
    newest = await graph.aget_state(config)
    if not newest.values:
        raise InputError(f"no debate {thread!r} in {db}; see `debate list`")
    node, counter = counter_of(newest.values)
    ends: dict[int, str] = {}
    async for found in saver.alist(
        config
    ):  # newest first: the last one kept per round is its earliest
        channels = found.checkpoint.get("channel_values", {})
        if channels.get("phase") == node:
            ends[channels.get(counter, 0)] = found.config["configurable"]["checkpoint_id"]
        if channels.get("phase") == "setup":
            break
    if round_no not in ends:
        origin = newest.values.get("forked_from")
        earlier = (
            f"; rounds before {origin['round']} are {origin['thread']}'s, the debate this one was forked from: "
            f"fork that"
            if origin and round_no < origin["round"]
            else ""
        )
        raise InputError(_not_reached(thread, round_no, sorted(ends), node == "turn") + earlier)
    point = {
        "configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": ends[round_no]}
    }
    return await graph.aget_state(point)


def _not_reached(thread: str, round_no: int, done: list[int], roundtable: bool) -> str:
    """Which rounds (turns) the thread has finished, and what to do."""
    unit = "turn" if roundtable else "round"
    if not done:
        return f"debate {thread} has not finished a {unit} yet; fork it once {unit} 1 has ended"
    have = f"{unit}s {done[0]}-{done[-1]}" if len(done) > 1 else f"{unit} {done[0]}"
    return f"--round {round_no}: debate {thread} has finished {have}; fork at one of those"


def fork_settings(
    values: dict[str, Any], changes: Changes, round_no: int
) -> tuple[dict[str, Any], RunSettings]:
    """Return the fork's context and settings: the original's context with the changes, resolved as ``intake`` resolves.

    Without changes the original's settings are kept as they are (a config file
    edited since is not read again). ``judge_model`` resolves the context once
    more with that model and takes its judge, so the judge's window, output
    budget and price come from the same rules as everyone else's.
    """
    original: RunSettings = values["settings"]
    if changes == Changes():
        return dict(values.get("context") or {}), original
    roundtable = original["protocol"] == "roundtable"
    given = {
        "agents": changes.agents,
        "model": changes.model,
        ("turns" if roundtable else "rounds"): changes.rounds,
        "config_file": str(Path(changes.config).resolve()) if changes.config else None,
    }
    context_dict = {
        **(values.get("context") or {}),
        **{k: v for k, v in given.items() if v is not None},
    }
    context = context_of(context_dict, None)
    # a missing key is an input error, found before anything is written
    settings = settle(context).settings
    if changes.judge_model:
        judged = settle(replace(context, model=changes.judge_model)).settings
        prices = {**settings["prices"], **judged["prices"]}
        settings = {**settings, "judge": judged["judge"], "prices": prices}
    _refuse_unforkable(original, settings, round_no)
    return context_dict, settings


def _refuse_unforkable(original: RunSettings, settings: RunSettings, round_no: int) -> None:
    """Refuse what a fork cannot apply: it would be accepted and ignored."""
    problems = [
        f"{key}: the fork would change it from {original.get(key)!r} to {settings.get(key)!r}, but it acts "
        f"before round 1, which the fork keeps; leave it as the original has it"
        for key in UNFORKABLE
        if original.get(key) != settings.get(key)
    ]
    if settings["rounds"] < round_no:
        problems.append(
            f"rounds: {settings['rounds']} in all ends before the fork's round {round_no}; give "
            f"--rounds {round_no} or more"
        )
    if problems:
        raise InputError("\n  ".join(["the fork cannot apply these settings:", *problems]))


def fork_values(
    point: Any, context: dict[str, Any], settings: RunSettings, origin: ForkOrigin
) -> dict[str, Any]:
    """Return the fork's first state: the original's at the fork point, with the new settings and its origin.

    A stop the original decided (convergence, budget, time) is dropped: the fork's
    own settings decide again from the next round on. The spend and the clock
    start again: the kept rounds' calls and time are the original's (``origin``
    keeps them), and the time between the original's last step and the fork
    is neither's.
    """
    values = dict(point.values)
    now = time.time()
    status = {
        **values["status"],
        "rounds": settings["rounds"],
        "tokens": 0,
        "cost": 0.0,
        "cached_tokens": 0,
        "saved": 0.0,
        "started_at": now,
        "updated_at": now,
    }
    return {
        **values,
        "context": context,
        "settings": settings,
        "status": status,
        "forked_from": origin,
        "spend": empty_spend(),
        "stopped": None,
        "stop_reason": None,
    }


async def ensure_new(graph: Any, thread: str) -> None:
    """Refuse a fork's thread that already holds a debate: a fork never writes over one."""
    if (await graph.aget_state({"configurable": {"thread_id": thread}})).values:
        raise InputError(
            f"thread {thread} already holds a debate; give the fork another --thread-id"
        )


async def write_fork(graph: Any, point: Any, values: dict[str, Any], new_thread: str) -> Any:
    """Write ``values`` as the new thread's first checkpoint, made by the node that ended the round."""
    node, _ = counter_of(point.values)
    config: Any = {"configurable": {"thread_id": new_thread}}
    await ensure_new(graph, new_thread)  # checked again under the thread's lock
    await graph.aupdate_state(config, values, as_node=node)
    return config


def origin_of(point: Any, thread: str, round_no: int) -> ForkOrigin:
    """Return the fork's ``forked_from`` record: where it comes from, where its own records begin, what the kept part cost.

    Of a fork's fork, the kept part's cost is the first fork's own spend up to the
    point plus what its own kept part had cost: all the calls that made the kept rounds.
    """
    values = point.values
    earlier: dict[str, Any] = values.get("forked_from") or {}
    spent = (values.get("spend") or empty_spend())["total"]
    return ForkOrigin(
        thread=thread,
        round=round_no,
        checkpoint=point.config["configurable"]["checkpoint_id"],
        turns=len(values.get("transcript") or []),
        summaries=len(values.get("summary_log") or []),
        spent=_plus(earlier.get("spent") or empty_tally(), spent),
        running_s=round(earlier.get("running_s", 0.0) + timeline(record_of(values))[0], 3),
    )


def _plus(first: Tally, second: Tally) -> Tally:
    """Two tallies added up, field by field (a field an older tally lacks counts 0)."""
    return Tally(
        calls=first["calls"] + second["calls"],
        input_tokens=first["input_tokens"] + second["input_tokens"],
        output_tokens=first["output_tokens"] + second["output_tokens"],
        cost=first["cost"] + second["cost"],
        cache_read_tokens=first.get("cache_read_tokens", 0) + second.get("cache_read_tokens", 0),
        cache_write_tokens=first.get("cache_write_tokens", 0) + second.get("cache_write_tokens", 0),
        saved=first.get("saved", 0.0) + second.get("saved", 0.0),
    )


def kept_line(values: RunRecord) -> str | None:
    """Return what the rounds a fork kept had cost when the original ran them, for beside the fork's own final line.

    None for a debate that is no fork, or a fork written before its origin kept the figures.
    """
    origin = values.get("forked_from")
    if not origin or "spent" not in origin:
        return None
    spent: Tally = origin["spent"]
    unit = "turn" if counter_of(values)[0] == "turn" else "round"
    kept = f"{unit}s 1-{origin['round']}" if origin["round"] > 1 else f"{unit} 1"
    return (
        f"kept from {origin['thread']} ({kept}, not run again): took "
        f"{duration(origin['running_s'])}: {counted(spent['calls'], 'model call')}, "
        f"{spent['input_tokens'] + spent['output_tokens']} tokens, ${spent['cost']:.4f}"
    )


def origin_text(origin: ForkOrigin | None) -> str:
    """Return a fork's origin for a table cell: ``THREAD@rK``; empty for a debate that is no fork."""
    return f"{origin['thread']}@r{origin['round']}" if origin else ""


VARIANT_KEYS = {
    "agents": "agents",
    "model": "model",
    "judge-model": "judge_model",
    "judge_model": "judge_model",
    "rounds": "rounds",
    "config": "config",
}
VARIANT_SHAPE = (
    "write each variant as KEY=VALUE words (KEY: agents, model, judge-model, rounds or config), "
    "the variants separated by semicolons"
)


def parse_variants(text: str) -> list[Changes]:
    """``--variants``: one ``Changes`` per ``;``-separated variant of space-separated ``key=value`` words."""
    return [_variant(n, part) for n, part in enumerate(text.split(";"), start=1)]


def _variant(n: int, part: str) -> Changes:
    """Variant number ``n``; a mistake names it and the shape a variant takes."""
    if not part.strip():
        raise InputError(f"--variants: variant {n} is empty; {VARIANT_SHAPE}")
    given: dict[str, Any] = {}
    for word in part.split():
        key, sep, value = word.partition("=")
        name = VARIANT_KEYS.get(key)
        if not sep or not value or name is None or name in given:
            why = f"sets {key} twice" if name in given else "is not KEY=VALUE with a known KEY"
            raise InputError(f"--variants: {quoted(word)} in variant {n} {why}; {VARIANT_SHAPE}")
        given[name] = value
    if "rounds" in given:
        if not given["rounds"].isdigit():
            raise InputError(
                f"--variants: rounds={quoted(given['rounds'])} in variant {n} is not a whole number; "
                f"write e.g. rounds=4"
            )
        given["rounds"] = int(given["rounds"])
    return Changes(**given)


def outcome_table(
    original: tuple[str, dict[str, Any]], forks: list[tuple[str, str, dict[str, Any]]]
) -> str:
    """Each variant's verdict and agreement beside the original's, and whether it flipped the original's outcome.

    Two outcomes are the same when their winning positions are (``key_of``: the
    answers match, else the one-line positions).
    """
    base = _verdict(original[1])
    rows = [["original", original[0], *_outcome(base), ""]]
    for label, thread, values in forks:
        verdict = _verdict(values)
        flipped = (
            "n/a" if not (base and verdict) else "yes" if key_of(verdict) != key_of(base) else "no"
        )
        rows.append([label, thread, *_outcome(verdict), flipped])
    head = ["variant", "thread", "verdict", "agreement", "flipped"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows])


def _verdict(values: dict[str, Any]) -> dict[str, Any] | None:
    """Return the winning position of a finished debate, or None when it states none."""
    verdict = (values.get("solution") or {}).get("verdict") or {}
    return verdict if verdict.get("position") or verdict.get("answer") else None


def _outcome(verdict: dict[str, Any] | None) -> list[str]:
    """Return the verdict and agreement cells."""
    if not verdict:
        return ["no verdict", ""]
    answer = f" (answer: {verdict['answer']})" if verdict.get("answer") else ""
    held = len(verdict.get("agreement", []))
    return [f"{verdict['position']}{answer}", f"{held} of {held + len(verdict.get('dissent', []))}"]


def _cell(text: str) -> str:
    """Return a table cell: one line, at most 70 characters, no column break."""
    return (
        textwrap.shorten(" ".join(text.split()), 70, placeholder="…").replace("|", "\\|")
        if text
        else ""
    )
