"""Prompts laid out for reuse: the stable part first, in a fixed order, so providers can cache it (issue 24).

The order of every debate prompt: system prompt, problem, the user's clarifications, the summary, the verbatim
turns oldest first, and last the task. The debates run against the real loopback OpenAI-compatible server and
the checks read the requests it received, as a provider's cache would see them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.types import Command

from debate_engine import Context, RoundtableContext, compile_debate, compile_roundtable
from debate_engine.memory import perspective
from debate_engine.memory.budget import (
    HISTORY_HEADER,
    PINNED_HEADER,
    PROBLEM_HEADER,
    SUMMARY_HEADER,
    heading,
)
from debate_engine.prompts import load_prompt
from tests.support.fake_replies import text_of
from tests.support.openai_server import OpenAIServer
from tests.support.prompt_cache import long_replies

PROBLEM = "Design a rate limiter for api_gateway.py at 1000 rps."
AGENTS = ("architect", "performance", "security")
ROUNDS = 4
TASK = "## Your task"
ORDER = (PROBLEM_HEADER, PINNED_HEADER, SUMMARY_HEADER, HISTORY_HEADER, TASK)


@contextmanager
def serving() -> Iterator[OpenAIServer]:
    """Yield the loopback server with 120-word contributions, and the engine pointed at it."""
    with OpenAIServer(words=120) as srv, pytest.MonkeyPatch.context() as mp:
        srv.tool_args = long_replies(120)
        mp.setenv("OPENAI_BASE_URL", srv.base_url)
        mp.setenv("OPENAI_API_KEY", "sk-test-layout")
        yield srv


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with serving() as srv:
        yield srv


@pytest.fixture(scope="module")
def clarified() -> Iterator[tuple[OpenAIServer, dict[str, Any]]]:
    """One debate with clarifications, shared by the checks that only read it."""
    with serving() as srv:
        yield srv, debate()


def chats(server: OpenAIServer) -> list[list[dict[str, Any]]]:
    """Return the messages of every chat request the server received, in order."""
    return [
        r["body"]["messages"]
        for r in server.requests
        if isinstance(r.get("body"), dict) and r["body"].get("messages")
    ]


def user_of(messages: list[dict[str, Any]]) -> str:
    return text_of(messages[-1]["content"])


def task_of(messages: list[dict[str, Any]]) -> str:
    return user_of(messages).split(f"{TASK}\n", 1)[-1]


def tokens(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Return a prompt's tokens as the server's caching rule counts them: each word, tagged with its message's role."""
    return [(m["role"], word) for m in messages for word in text_of(m["content"]).split()]


def common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def debate(clarify: bool = True) -> dict[str, Any]:
    """Three agents, four rounds in a window small enough for summaries from round 3, one call at a time."""
    graph, config = compile_debate(), {"configurable": {"thread_id": "layout"}}
    context = Context(
        model="openai:m",
        agents=",".join(AGENTS),
        rounds=ROUNDS,
        clarify=clarify,
        max_concurrency=1,
        context_window=3072,
        max_output_tokens=512,
    )
    values = graph.invoke({"problem": PROBLEM}, config, context=context)
    if clarify:
        values = graph.invoke(Command(resume="Redis 7 is available; keep p99 under 5 ms."), config)
    return values


def assert_ordered(user: str, sections: tuple[str, ...]) -> None:
    """Exactly these sections, in the fixed order, the problem first."""
    found = [h for h in ORDER if f"{h}\n" in user]
    assert found == list(sections), found
    starts = [user.index(f"{h}\n") for h in sections]
    assert starts == sorted(starts) and starts[0] == 0, starts
    assert user.startswith(f"{PROBLEM_HEADER}\n{PROBLEM}\n\n")


def assert_history_in_transcript_order(user: str, turns: list[dict[str, Any]]) -> None:
    """Every turn of the view's window is in the history section, older ones first."""
    history = user.index(f"{HISTORY_HEADER}\n")
    places = [user.find(f"{heading(t)}\n", history) for t in turns]
    assert -1 not in places, [heading(t) for t, p in zip(turns, places, strict=True) if p < 0]
    assert places == sorted(places) and places[-1] < user.index(f"{TASK}\n")


def test_an_agents_critiques_in_one_phase_share_everything_but_the_task(clarified) -> None:
    server, values = clarified
    critiques = [m for m in chats(server) if task_of(m).startswith("Here is the proposal of ")]
    assert len(critiques) == ROUNDS * len(AGENTS) * (len(AGENTS) - 1)
    groups: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
    for messages in critiques:  # a critic's phase: its system prompt and everything before the task
        groups.setdefault(
            (text_of(messages[0]["content"]), user_of(messages).split(TASK)[0]), []
        ).append(messages)
    assert len(groups) == ROUNDS * len(AGENTS), (
        "each critic's critiques of one round share one prefix"
    )
    for members in groups.values():
        assert len(members) == len(AGENTS) - 1
        assert len({task_of(m) for m in members}) == len(members), (
            "only the task differs: whose proposal"
        )
        first, *others = [tokens(m) for m in members]
        before_task = len(
            tokens(
                [*members[0][:-1], {"role": "user", "content": user_of(members[0]).split(TASK)[0]}]
            )
        )
        for (
            other
        ) in others:  # byte-identical at the server up to the task: a provider caches all of it
            assert common_prefix(first, other) >= before_task
    assert any(t["view"]["summary_id"] for t in values["transcript"] if t["kind"] == "critique"), (
        "the window is small enough that critiques were also made with a summary"
    )


def test_the_judges_synthesis_follows_the_order(clarified) -> None:
    server, values = clarified
    transcript, synthesis = values["transcript"], values["transcript"][-1]
    assert synthesis["kind"] == "synthesis" and synthesis["view"]["summary_id"], (
        "the judge needed a summary"
    )
    judge = values["settings"]["judge"]
    request = next(
        m
        for m in chats(server)
        if text_of(m[0]["content"]) == judge["system_prompt"]
        and task_of(m).startswith("The debate ran")
    )
    assert [m["role"] for m in request] == ["system", "user"]
    user = user_of(request)
    assert_ordered(user, ORDER)
    clarifications = [t for t in transcript if t["kind"] == "clarification"]
    assert clarifications and all(
        t["content"] in user.split(SUMMARY_HEADER)[0] for t in clarifications
    ), (
        "the clarifications sit right after the problem, before the summary, even when it covers them"
    )
    view = synthesis["view"]
    window = [
        t
        for t in perspective(transcript[view["from_seq"] : view["to_seq"]], "judge")
        if t["kind"] != "clarification"
    ]
    assert len(window) > 1
    assert_history_in_transcript_order(user, window)


def test_every_debate_prompt_opens_with_the_problem_and_ends_with_its_task(clarified) -> None:
    server, values = clarified
    for messages in chats(server):
        user = user_of(messages)
        if user.startswith(f"{PROBLEM_HEADER}\n"):
            assert user.rindex(f"{TASK}\n") > max(user.find(f"{h}\n") for h in ORDER[:-1])
    prompts = [user_of(m) for m in chats(server)]
    summaries = sum(r["calls"] for r in values["summary_log"])
    assert summaries > 0
    # every call but the questions: the debaters', the judge's and the summaries'
    assert (
        sum(p.startswith(f"{PROBLEM_HEADER}\n") for p in prompts) == 3 + ROUNDS * 9 + 1 + summaries
    )


def test_a_summary_prompt_begins_with_the_prefix_its_agent_sends(clarified) -> None:
    """The summarizer asks the agent's own prompt with another task, so the provider's cache serves its start.

    A summary read in chunks folds an interim summary into its later chunks, which no call was sent; the judge's
    summaries open as its synthesis does, but the synthesis comes after them.
    """
    server, values = clarified
    summary_task = load_prompt("phases/summarize").split("{")[0]
    asked = [m for m in chats(server) if task_of(m).startswith(summary_task)]
    assert len(asked) == sum(r["calls"] for r in values["summary_log"]) > 0
    debaters = {a["system_prompt"] for a in values["settings"]["agents"]}
    shared = interim = 0
    for summary in asked:
        system, user = text_of(summary[0]["content"]), user_of(summary)
        assert system in debaters | {values["settings"]["judge"]["system_prompt"]}, (
            "its agent's own system prompt"
        )
        assert_ordered(user, tuple(h for h in ORDER if f"{h}\n" in user))
        if system not in debaters:
            continue
        calls = [
            user_of(m)
            for m in chats(server)
            if text_of(m[0]["content"]) == system and m is not summary
        ]
        if any(call.startswith(user.rsplit(f"\n\n{TASK}\n", 1)[0]) for call in calls):
            shared += 1  # the agent's calls of the phase beside which it was made begin with all but its task
        else:
            fold = user.split(f"{SUMMARY_HEADER}\n", 1)[1].split("\n\n## ", 1)[0]
            assert not any(fold in call for call in calls), (
                "only a chunk's interim summary may end the prefix"
            )
            interim += 1
    assert shared >= 3 and shared >= interim


def test_a_refinement_keeps_its_proposal_in_place_and_names_it(server: OpenAIServer) -> None:
    """Taken out of the middle of the history (and quoted in the task), the proposal would end the shared prefix."""
    values = debate(clarify=False)
    transcript = values["transcript"]
    refine = [m for m in chats(server) if task_of(m).startswith("Your current proposal:")]
    turns = [t for t in transcript if t["kind"] == "refinement"]
    assert (
        len(refine) == len(turns) == ROUNDS * len(AGENTS)
    )  # an agent's refinements in round order
    system = {a["id"]: a["system_prompt"] for a in values["settings"]["agents"]}
    named = 0
    for turn in turns:
        request = next(m for m in refine if text_of(m[0]["content"]) == system[turn["speaker"]])
        refine.remove(request)
        view = turn["view"]
        position = [
            t
            for t in transcript[: view["to_seq"]]
            if t["speaker"] == turn["speaker"] and t["kind"] in ("proposal", "refinement")
        ][-1]
        if position["seq"] >= view["from_seq"]:  # in the history: named, not quoted
            assert task_of(request).startswith(
                f"Your current proposal: your {position['kind']} of round "
                f"{position['round']}, in your history above."
            )
            named += 1
        else:  # the summary covers it: quoted in the task
            assert position["content"] in task_of(request)
        window = perspective(transcript[view["from_seq"] : view["to_seq"]], turn["speaker"])
        assert view["turns"] == len(window), "nothing is taken out of the history"
    assert named > len(AGENTS)


def test_the_roundtables_turns_and_moderation_follow_the_order(server: OpenAIServer) -> None:
    context = RoundtableContext(
        model="openai:m",
        agents=",".join(AGENTS),
        turns=9,
        summary_every=3,
        order="moderator",
        max_concurrency=1,
    )
    values = compile_roundtable().invoke(
        {"problem": PROBLEM}, {"configurable": {"thread_id": "rt"}}, context=context
    )
    messages = [t for t in values["transcript"] if t["kind"] == "message"]
    turns = [
        m
        for m in chats(server)
        if task_of(m).startswith("The topic of the roundtable is the problem above")
    ]
    moderation = [m for m in chats(server) if task_of(m).startswith("You moderate the roundtable")]
    assert len(turns) == len(messages) and moderation
    with_summary = 0
    for turn, request in zip(messages, turns, strict=True):
        user, view = user_of(request), turn["view"]
        sections = tuple(
            h
            for h in ORDER
            if h != PINNED_HEADER
            and (h != SUMMARY_HEADER or view["summary_id"])
            and (h != HISTORY_HEADER or view["turns"])
        )
        assert_ordered(user, sections)
        if view["turns"]:
            assert_history_in_transcript_order(
                user, values["transcript"][view["from_seq"] : view["to_seq"]]
            )
        with_summary += bool(view["summary_id"])
    assert with_summary, "the shared summary was in some turns' prompts"
    for request in moderation:
        assert user_of(request).startswith(f"{PROBLEM_HEADER}\n{PROBLEM}\n\n")
