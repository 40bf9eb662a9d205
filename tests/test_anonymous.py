"""Anonymous critiques (issue 42): critiques, refinements and the judge see the other agents as Author A, B, C.

Debates run against the real loopback OpenAI-compatible server, which records every request it received: in an
anonymous debate no other agent's id, name, role or model reaches a request body (the sender's own system prompt
and role aside), while the transcript keeps who wrote what. The same debate named shows the names, so each check
can fail; the context field, the config key and ``--anonymous`` each turn it on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from debate_engine import Context, RoundtableContext, compile_debate, compile_roundtable
from debate_engine.app.cli.main import main
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import AgentProfile, RunSettings
from debate_engine.memory import new_turn
from debate_engine.memory.perspective import Relabelled, author_labels, perspective
from debate_engine.nodes.views import agent_call, anonymized
from tests.support.fake_replies import wanted_tool
from tests.support.graph_runs import Prompts
from tests.support.openai_server import OpenAIServer, serving

PROBLEM = "Design a rate limiter for a public HTTP API."
AGENTS = [
    {"id": "alder", "name": "Alder Vance", "role": "kiss", "model": "openai:model-kestrel"},
    {"id": "birch", "name": "Birch Okafor", "role": "architect", "model": "openai:model-lynx"},
    {"id": "cedar", "name": "Cedar Moss", "role": "performance", "model": "openai:model-osprey"},
]
JUDGE_MODEL = "model-heron"
"""Each seat answers on a model of its own: the model a request names tells who sent it."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with serving(monkeypatch, words=12) as srv:
        yield srv


def config_file(tmp_path: Path, **debate: Any) -> str:
    path = tmp_path / "debate.json"
    doc = {
        "agents": AGENTS,
        "judge": {"model": f"openai:{JUDGE_MODEL}"},
        "debate": {"rounds": 2, **debate},
    }
    path.write_text(json.dumps(doc))
    return str(path)


def names_of(agent: dict[str, str]) -> list[str]:
    """Every way a request could name an agent: its id, each word of its name, its role, its model."""
    return [agent["id"], *agent["name"].split(), agent["role"], agent["model"].split(":", 1)[1]]


def sender(body: dict[str, Any]) -> str:
    """Return the seat a request came from, by the model it names."""
    by_model = {a["model"].split(":", 1)[1]: a["id"] for a in AGENTS}
    return by_model.get(body["model"], "judge")


def phase_of(body: dict[str, Any]) -> str:
    text = json.dumps(body["messages"])
    if wanted_tool(body) == "JudgeSolution":
        return "judge"
    for phase, said in (("critique", "Critique this proposal"), ("refine", "Refine your proposal")):
        if said in text:
            return phase
    return "other"


def leaks(server: OpenAIServer) -> dict[str, list[str]]:
    """Return, per phase, the names of other seats found in a request body (the ``model`` field aside)."""
    found: dict[str, list[str]] = {}
    for request in server.requests:
        body = dict(request["body"])
        who = sender(body)
        del body["model"]
        text = json.dumps(body)
        for agent in AGENTS:
            if agent["id"] == who:
                continue  # its own system prompt and role are its own
            for name in names_of(agent):
                if re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE):
                    found.setdefault(phase_of(request["body"]), []).append(f"{who} saw {name}")
        if who != "judge" and re.search(rf"\b{JUDGE_MODEL}\b", text):
            found.setdefault(phase_of(request["body"]), []).append(f"{who} saw {JUDGE_MODEL}")
    return found


def phases(server: OpenAIServer) -> dict[str, int]:
    counted: dict[str, int] = {}
    for request in server.requests:
        counted[phase_of(request["body"])] = counted.get(phase_of(request["body"]), 0) + 1
    return counted


def debate(context: Context, thread: str = "t") -> dict[str, Any]:
    return compile_debate().invoke(
        {"problem": PROBLEM}, {"configurable": {"thread_id": thread}}, context=context
    )


def test_no_other_agents_name_role_or_model_reaches_a_critique_refine_or_judge_request(
    server: OpenAIServer, tmp_path: Path
) -> None:
    values = debate(Context(config_file=config_file(tmp_path), summarize=False, anonymous=True))
    assert phases(server) == {"other": 3, "critique": 12, "refine": 6, "judge": 1}
    assert leaks(server) == {}
    prompts = "\n".join(server.prompts())
    assert "### Proposal by Author A (round 1)" in prompts and "Critique by Author" in prompts
    assert "### Proposal by you (round 1)" in prompts and "of you (round 1)" in prompts
    # the transcript keeps who wrote what, on which model, of whom
    transcript = values["transcript"]
    critiques = [(t["speaker"], t["target"]) for t in transcript if t["kind"] == "critique"]
    ids = [a["id"] for a in AGENTS]
    assert sorted(set(critiques)) == sorted((a, b) for a in ids for b in ids if a != b)
    assert {t["speaker"]: t["model"] for t in transcript if t["kind"] == "proposal"} == {
        a["id"]: a["model"] for a in AGENTS
    }
    assert {t["role"] for t in transcript if t["speaker"] == "birch"} == {"architect"}
    assert values["solution"]["verdict"]["agreement"] or values["solution"]["verdict"]["dissent"]


@pytest.mark.parametrize("method", ["merge", "voting"])
def test_a_judge_that_merges_or_writes_up_a_vote_sees_letters_too(
    server: OpenAIServer, tmp_path: Path, method: str
) -> None:
    path = config_file(tmp_path, rounds=1, synthesisMethod=method)
    values = debate(Context(config_file=path, summarize=False, anonymous=True))
    assert phases(server)["judge"] == 1 and leaks(server) == {}
    judge = next(p for p in server.prompts() if "Author A" in p and "final" in p)
    assert "Author B" in judge and "Author C" in judge
    assert values["solution"]["verdict"]["method"] == method


def test_the_same_debate_named_shows_the_names_in_every_phase(
    server: OpenAIServer, tmp_path: Path
) -> None:
    debate(Context(config_file=config_file(tmp_path), summarize=False, rounds=1))
    found = leaks(server)
    assert {"critique", "refine", "judge"} <= set(found)
    assert any("saw alder" in leak for leak in found["judge"])


def test_the_config_key_turns_it_on_and_the_context_field_off_again(
    server: OpenAIServer, tmp_path: Path
) -> None:
    path = config_file(tmp_path, anonymous=True, rounds=1)
    assert resolve(Context(config_file=path))["anonymous"] is True
    debate(Context(config_file=path, summarize=False), "on")
    assert leaks(server) == {}
    server.requests.clear()
    debate(Context(config_file=path, summarize=False, anonymous=False), "off")
    assert "judge" in leaks(server)
    assert resolve(Context())["anonymous"] is False


def test_debate_run_anonymous_hides_the_names_and_without_it_they_show(
    server: OpenAIServer, tmp_path: Path
) -> None:
    path = config_file(tmp_path, rounds=1)
    argv = ["run", "--config", path, "--no-summary", "--db", str(tmp_path / "d.sqlite"), "--quiet"]
    assert main([*argv, "--anonymous", "--thread-id", "anon", PROBLEM]) == 0
    assert leaks(server) == {} and phases(server)["judge"] == 1
    server.requests.clear()
    assert main([*argv, "--thread-id", "named", PROBLEM]) == 0
    assert "critique" in leaks(server)


def test_an_anonymous_roundtable_shows_speakers_and_the_judge_letters_only(
    server: OpenAIServer, tmp_path: Path
) -> None:
    values = compile_roundtable().invoke(
        {"problem": PROBLEM},
        {"configurable": {"thread_id": "rt"}},
        context=RoundtableContext(
            config_file=config_file(tmp_path), summarize=False, turns=5, anonymous=True
        ),
    )
    assert leaks(server) == {}
    assert [t["speaker"] for t in values["transcript"] if t["kind"] == "message"] == [
        "alder",
        "birch",
        "cedar",
        "alder",
        "birch",
    ]
    prompts = server.prompts()
    assert any("### you (turn 1)" in p for p in prompts)
    assert any(re.search(r"### Author [ABC] \(turn 2\)", p) for p in prompts)


def test_a_person_at_an_anonymous_table_sees_letters_for_every_other_seat() -> None:
    spy = Prompts()
    graph = compile_debate()
    config: Any = {"configurable": {"thread_id": "p"}, "callbacks": [spy]}
    context = Context(
        model="fake", agents="architect,security", humans="alice", rounds=1, anonymous=True
    )
    graph.invoke({"problem": PROBLEM}, config, context=context)
    asked = []
    while pending := graph.get_state(config).interrupts:
        asked += [i.value for i in pending]
        graph.invoke(Command(resume={i.id: f"My {i.value['kind']}." for i in pending}), config)
    critiques = [q for q in asked if q["kind"] == "critique"]
    targets = [q["target"] for q in critiques]  # two other seats, each by its letter of the run
    assert len(set(targets)) == 2 and all(re.fullmatch(r"Author [A-C]", t) for t in targets)
    for q in asked:  # the seat's own system prompt (the generalist's) aside
        shown = json.dumps([q["task"], q["target"], q["view"]["user"]])
        assert not re.search(r"\b(architect|security)\b", shown, re.IGNORECASE), q
    assert all(q["target"] in q["task"] for q in critiques)
    refine = next(q for q in asked if q["kind"] == "refinement")
    assert "Critique by Author" in refine["view"]["user"] and "of you" in refine["view"]["user"]
    # the agents see the person by a letter too, and the transcript keeps the seat's id
    agents = [c["user"] for c in spy.calls.values() if c["phase"] in ("critique", "synthesize")]
    assert agents and not any("alice" in user for user in agents)
    transcript = graph.get_state(config).values["transcript"]
    assert {t["target"] for t in transcript if t["speaker"] == "human:alice"} >= {
        "architect",
        "security",
    }


def test_letters_are_shuffled_per_run_the_same_for_every_reader_and_stable_within_it() -> None:
    authors = ["architect", "kiss", "security", "testing"]
    first = author_labels(authors, "kiss", "thread-1")
    assert first == author_labels(authors, "kiss", "thread-1")
    assert first["kiss"] == "you"
    judge = author_labels(authors, "judge", "thread-1")
    assert sorted(judge.values()) == ["Author A", "Author B", "Author C", "Author D"]
    # every reader knows an author by the judge's letter: a critique's Author B is the judge's Author B
    assert all(first[a] == judge[a] for a in authors if a != "kiss")
    orders = {
        tuple(author_labels(authors, "judge", f"run-{i}")[a] for a in authors) for i in range(40)
    }
    assert len(orders) > 10, "the letters do not follow the agents' order"
    letters_of_kiss = {author_labels(authors, r, "run")["kiss"] for r in authors + ["judge"]}
    assert len(letters_of_kiss - {"you"}) == 1, "a reader has an order of its own"
    many = author_labels([f"v{i}" for i in range(30)], "judge", "s")
    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + ["AA", "AB", "AC", "AD"]
    assert set(many.values()) == {f"Author {x}" for x in letters}


def profile(agent_id: str, role: str) -> AgentProfile:
    return AgentProfile(
        id=agent_id,
        name=agent_id.title(),
        role=role,
        model="fake",
        fallback_models=[],
        temperature=0.5,
        system_prompt="You debate.",
        summary_prompt=None,
        context_window=8192,
        max_output_tokens=256,
        timeout_s=10,
        summarization={},
    )


def test_a_relabelled_transcript_keeps_each_readers_perspective() -> None:
    transcript = [
        new_turn(0, kind="proposal", round_no=1, speaker="kiss", role="kiss", content="k"),
        new_turn(1, kind="proposal", round_no=1, speaker="security", role="security", content="s"),
        new_turn(
            2,
            kind="critique",
            round_no=1,
            speaker="security",
            role="security",
            content="c",
            target="kiss",
        ),
        new_turn(
            3,
            kind="critique",
            round_no=1,
            speaker="kiss",
            role="kiss",
            content="d",
            target="security",
        ),
    ]
    labels = author_labels(["kiss", "security"], "kiss", "r")
    shown = Relabelled(transcript, labels)
    assert len(shown) == 4 and [t["content"] for t in shown[1:3]] == ["s", "c"]
    mine = perspective(shown, "you")
    assert [t["content"] for t in mine] == [t["content"] for t in perspective(transcript, "kiss")]
    assert mine[1]["speaker"] == "Author A" and mine[1]["target"] == "you"
    assert all("kiss" not in json.dumps(t) and "security" not in json.dumps(t) for t in mine)
    assert transcript[2]["speaker"] == "security", "the transcript itself is never changed"


def test_a_task_names_agents_by_their_letters_and_leaves_what_they_wrote() -> None:
    settings: Any = {"agents": [profile("kiss", "kiss"), profile("kiss-2", "kiss")]}
    labels = {"kiss": "Author A", "kiss-2": "Author B"}
    task = (
        "Here is the proposal of kiss-2 (kiss):\n\nKeep it simple, as kiss would say.\n"
        "- kiss, kiss-2: The answer is 4.\nkiss-2 (kiss), final proposal:"
    )
    assert anonymized(task, labels, settings) == (
        "Here is the proposal of Author B:\n\nKeep it simple, as kiss would say.\n"
        "- Author A, Author B: The answer is 4.\nAuthor B, final proposal:"
    )


def test_the_setting_alone_turns_the_judges_view_anonymous() -> None:
    settings = resolve(Context(model="fake", agents="kiss,security", rounds=1))
    state: Any = {"settings": settings, "problem": "p", "transcript": [], "summary_log": []}
    state["transcript"] = [
        new_turn(0, kind="proposal", round_no=1, speaker="security", role="security", content="s")
    ]
    judge = settings["judge"]
    named = agent_call(state, judge, None, kind="synthesis", round_no=1, task="Judge.")
    assert "Proposal by security" in named.user
    hidden: RunSettings = {**settings, "anonymous": True}
    anon = agent_call(
        {**state, "settings": hidden}, judge, None, kind="synthesis", round_no=1, task="Judge."
    )
    assert re.search(r"Proposal by Author [AB] ", anon.user) and "security" not in anon.user


def test_no_summary_names_another_agent_in_an_anonymous_debate(
    server: OpenAIServer, tmp_path: Path
) -> None:
    """Summaries are written from the transcript as their reader sees it: letters, never names."""
    path = config_file(tmp_path, rounds=3)
    context = Context(config_file=path, anonymous=True, context_window=2048, max_output_tokens=256)
    values = debate(context)
    assert values["summary_log"]  # the window made every agent summarize
    assert any(wanted_tool(r["body"]) == "StructuredSummary" for r in server.requests)
    assert leaks(server) == {}


def test_the_report_says_the_debate_was_anonymous_and_keeps_the_names() -> None:
    from debate_engine.app.reports.markdown import render_report

    named = compile_debate().invoke(
        {"problem": PROBLEM},
        {"configurable": {"thread_id": "n"}},
        context=Context(model="fake", rounds=1, agents="kiss,security"),
    )
    hidden = compile_debate().invoke(
        {"problem": PROBLEM},
        {"configurable": {"thread_id": "a"}},
        context=Context(model="fake", rounds=1, agents="kiss,security", anonymous=True),
    )
    assert "Anonymous:" not in render_report(named)
    report = render_report(hidden)
    assert "Anonymous: the agents and the judge saw one another as Author A, B, C." in report
    assert "| kiss | kiss |" in report  # who wrote what stays in the report


def test_the_viewer_says_the_debate_was_anonymous(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from debate_engine.app.viewer import create_app

    db = str(tmp_path / "v.sqlite")
    for thread, hidden in (("named", False), ("hidden", True)):
        argv = ["run", "--model", "fake", "--rounds", "1", "--agents", "kiss,security", "--quiet"]
        argv += ["--anonymous"] if hidden else []
        assert main([*argv, "--db", db, "--thread-id", thread, PROBLEM]) == 0
    with TestClient(create_app(db)) as client:
        said = "anonymous: the agents and the judge saw one another as Author A, B, C"
        assert said in client.get("/debates/hidden").text
        assert said not in client.get("/debates/named").text
