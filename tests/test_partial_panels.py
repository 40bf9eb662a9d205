"""An agent whose calls fail after every retry and fallback: the run stops (the default), or goes on without it.

With ``--on-agent-failure continue`` the debate goes on with the agents left, and its verdict reads
``partial: 2 of 3 agents``, the missing agent named with its error: in the state, the report, ``debate
list``, the viewer, and counted apart by ``compare``. The agent is kept out for the rest of the run, in
the state, so a resume never asks it again. The fast tests give one agent the fake model that fails every
call (``fake:fail=transport``) through a config file; the must-show test gives one agent a model name the
loopback OpenAI-compatible server refuses every request for, its fallback too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from starlette.testclient import TestClient

from debate_engine import Context, compile_debate
from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare import results
from debate_engine.app.measure.compare.execute import record_of
from debate_engine.app.measure.compare.protocols import Protocol
from debate_engine.app.measure.compare.tasks import Task
from debate_engine.app.viewer import create_app
from debate_engine.calls import retry
from debate_engine.calls.retry import RETRIES
from debate_engine.config.file import ConfigError
from debate_engine.config.resolve import resolve
from tests.support.debate_cli import in_process
from tests.support.graph_runs import Prompts
from tests.support.openai_server import OpenAIServer, serving

BROKEN = "fake:fail=transport"


def config(tmp_path: Path, broken: str = BROKEN, **debate: Any) -> str:
    """Write a config whose security agent is on ``broken``, the others and the judge on working models."""
    doc = {
        "agents": [
            {"id": "kiss", "role": "kiss", "model": "fake"},
            {"id": "security", "role": "security", "model": broken},
            {"id": "testing", "role": "testing", "model": "fake:words=20"},
        ],
        "judge": {"model": "fake"},
        "debate": {"rounds": 2, **debate},
    }
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(doc))
    return str(path)


def stored(db: Path, thread: str) -> dict[str, Any]:
    with SqliteSaver.from_conn_string(str(db)) as saver:
        return dict(
            compile_debate(checkpointer=saver)
            .get_state({"configurable": {"thread_id": thread}})
            .values
        )


def text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One debate run by the command line with ``--on-agent-failure continue``, its security agent failing."""
    folder = tmp_path_factory.mktemp("partial")
    db = folder / "d.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEBATE_MODEL", "fake")
        done = in_process(
            "run",
            "--config",
            config(folder),
            "--on-agent-failure",
            "continue",
            "--db",
            str(db),
            "--thread-id",
            "p",
            "--quiet",
            "Design a cache",
        )
    assert done.returncode == 0, done.stderr
    yield {"db": db, "stdout": done.stdout, "values": stored(db, "p")}


def test_the_debate_goes_on_without_the_failing_agent_and_its_verdict_says_partial(
    partial_run: dict[str, Any],
) -> None:
    values = partial_run["values"]
    assert values["phase"] == "done" and values["solution"]
    assert {t["speaker"] for t in values["transcript"] if t["kind"] == "refinement"} == {
        "kiss",
        "testing",
    }
    assert all(t["speaker"] != "security" for t in values["transcript"])
    verdict = values["solution"]["verdict"]
    panel = verdict["panel"]
    assert panel["partial"] == "partial: 2 of 3 agents" and panel["agents"] == 3
    assert panel["answered"] == 2 and panel["models"] == ["fake", "fake:words=20"]
    [missing] = panel["missing"]
    assert (missing["agent"], missing["round"], missing["phase"]) == ("security", 1, "propose")
    assert (
        missing["models"] == [BROKEN]
        and "ConnectionError: fake transport failure" in missing["error"]
    )
    assert verdict["confidence"]["how"].endswith("; partial: 2 of 3 agents")
    assert len(verdict["agreement"]) + len(verdict["dissent"]) == 2, "a missing agent is no vote"
    assert [a["id"] for a in values["settings"]["agents"]] == ["kiss", "testing"]
    assert values["status"]["partial"].startswith("2 of 3 agents; missing security (")
    assert "Panel: partial: 2 of 3 agents; missing security (" in partial_run["stdout"]


def test_the_report_and_debate_list_name_the_missing_agent_with_its_error(
    partial_run: dict[str, Any],
) -> None:
    db = str(partial_run["db"])
    report = in_process("report", "p", "--db", db)
    assert report.returncode == 0, report.stderr
    assert "- partial: 2 of 3 agents" in report.stdout
    assert (
        "- missing: security (security), from round 1 (propose): fake:fail=transport: ConnectionError: fake "
        "transport failure" in report.stdout
    )
    table = in_process("list", "--db", db)
    assert table.stdout.splitlines()[1].split("\t")[2] == "done (partial)"
    assert (
        "p is partial: 2 of 3 agents; missing security (fake:fail=transport: ConnectionError: fake "
        "transport failure)" in table.stderr
    )
    [row] = map(json.loads, in_process("list", "--json", "--db", db).stdout.splitlines())
    assert row["status"] == "done" and row["partial"].startswith("2 of 3 agents; missing security")


def test_the_viewers_verdict_block_says_partial_and_names_the_missing_agent(
    partial_run: dict[str, Any],
) -> None:
    with TestClient(create_app(str(partial_run["db"]))) as client:
        shown = text_of(client.get("/debates/p").text)
    verdict = shown[shown.index("Verdict") :]
    assert "partial partial: 2 of 3 agents missing security from round 1 (propose):" in verdict
    assert "ConnectionError: fake transport failure" in verdict
    assert "panel 2 agents answered on 2 distinct models (fake, fake:words=20)" in verdict


def test_compare_counts_a_partial_run_apart_from_the_whole_ones(
    partial_run: dict[str, Any],
) -> None:
    protocol = Protocol(name="debate", label="debate", graph="debate", context=Context())
    task = Task(id="t1", question="Design a cache", answer="x", kind="exact")
    partial = record_of(protocol, task, 1, "p", partial_run["values"])
    assert partial["partial"] == "partial: 2 of 3 agents"
    whole = {**partial, "task": "t2", "partial": None, "correct": True}
    figures = results.summarise("debate", "debate", [partial, whole], None)
    assert figures["runs"] == 2 and figures["partial"] == {"runs": 1, "correct": 0}
    assert ", 1/2 (1 partial, 0 right)" in results.markdown([figures], "t")
    whole_only = results.summarise("debate", "debate", [whole], None)
    assert whole_only["partial"] == {"runs": 0, "correct": 0}
    assert "partial" not in results.markdown([whole_only], "t")


def test_by_default_the_run_stops_at_the_failure_and_resume_asks_the_call_again(
    tmp_path: Path,
) -> None:
    db = tmp_path / "d.sqlite"
    args = ["--db", str(db), "--quiet"]
    assert main(["run", "--config", config(tmp_path), "--thread-id", "s", *args, "Q?"]) == 3
    stopped = stored(db, "s")
    assert stopped["phase"] == "setup" and len(stopped["settings"]["agents"]) == 3
    assert "missing" not in stopped["settings"]
    assert main(["resume", "s", *args]) == 3, "asked again, the fake fails again: stopped again"


def test_the_flag_overrides_the_config_key_and_a_bad_value_is_named(tmp_path: Path) -> None:
    continuing = config(tmp_path, onAgentFailure="continue")
    assert resolve(Context(config_file=continuing))["on_agent_failure"] == "continue"
    assert (
        resolve(Context(config_file=continuing, on_agent_failure="stop"))["on_agent_failure"]
        == "stop"
    )
    assert resolve(Context(config_file=config(tmp_path)))["on_agent_failure"] == "stop"
    db = ["--db", str(tmp_path / "d.sqlite"), "--quiet"]
    stop = ["run", "--config", continuing, "--on-agent-failure", "stop", "--thread-id", "x", *db]
    assert main([*stop, "Design a cache"]) == 3
    with pytest.raises(ConfigError, match="on_agent_failure"):
        resolve(Context(on_agent_failure="carry on"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"debate\.onAgentFailure: 'skip' is not valid"):
        resolve(Context(config_file=config(tmp_path, onAgentFailure="skip")))
    refused = in_process("run", "--on-agent-failure", "skip", "Design a cache")
    assert refused.returncode == 2 and "--on-agent-failure" in refused.stderr


def test_no_agent_left_stops_the_run_as_before(tmp_path: Path) -> None:
    path = config(tmp_path)
    doc = json.loads(Path(path).read_text())
    doc["agents"] = [{**a, "model": BROKEN} for a in doc["agents"]]
    Path(path).write_text(json.dumps(doc))
    db = ["--db", str(tmp_path / "d.sqlite"), "--quiet"]
    done = ["run", "--config", path, "--on-agent-failure", "continue", "--thread-id", "n", *db]
    assert main([*done, "Design a cache"]) == 3


def test_a_resumed_continue_run_never_asks_the_missing_agent_again(tmp_path: Path) -> None:
    calls = Prompts()
    context = Context(config_file=config(tmp_path, onAgentFailure="continue"), summarize=False)
    run = {"configurable": {"thread_id": "r"}, "callbacks": [calls]}
    with SqliteSaver.from_conn_string(str(tmp_path / "d.sqlite")) as saver:
        graph = compile_debate(checkpointer=saver)
        graph.invoke(
            {"problem": "Design a cache"}, run, context=context, interrupt_after=["critique"]
        )
        first = [c["agent_id"] for c in calls.calls.values()]
        assert first.count("security") == 1 and graph.get_state(run).next == ("refine",)
        calls.calls.clear()
        values = graph.invoke(None, run, context=context)
    resumed = [c["agent_id"] for c in calls.calls.values()]
    assert values["solution"] and "kiss" in resumed
    assert "security" not in resumed, "the resume asked the agent the debate went on without"
    assert [m["agent"] for m in values["settings"]["missing"]] == ["security"]


def test_a_phase_resumed_after_the_failure_drops_the_agent_without_asking_it_again(
    tmp_path: Path,
) -> None:
    """The failure is in the checkpoint, the phase not done: a person's question paused it (as a kill would)."""
    calls = Prompts()
    context = Context(
        config_file=config(tmp_path, onAgentFailure="continue", rounds=1),
        agents="kiss,security",
        humans="alice",
        summarize=False,
    )
    run = {"configurable": {"thread_id": "h"}, "callbacks": [calls]}
    graph = compile_debate()
    graph.invoke({"problem": "Design a cache"}, run, context=context)
    assert graph.get_state(run).interrupts, "the propose phase waits for alice"
    assert "missing" not in graph.get_state(run).values["settings"]
    while pending := graph.get_state(run).interrupts:
        graph.invoke(Command(resume={i.id: "alice's turn" for i in pending}), run)
    asked = [c["agent_id"] for c in calls.calls.values()]
    assert asked.count("security") == 1, "the resumed phase asked the failed call again"
    values = graph.get_state(run).values
    assert values["solution"]["verdict"]["panel"]["partial"] == "partial: 1 of 2 agents"
    assert [m["agent"] for m in values["settings"]["missing"]] == ["security"]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setattr(retry, "FIRST_WAIT_S", 0.01)  # the road's back-off, shortened: same retries
    with serving(monkeypatch, words=20) as srv:
        srv.model_always = {"broken": "500", "broken-too": "500"}
        yield srv


def loopback_config(tmp_path: Path) -> str:
    """Every seat on the loopback server; security's model and its fallback are refused every request."""
    working = {"model": "openai:test-model"}
    doc = {
        "agents": [
            {"id": "kiss", "role": "kiss", **working},
            {
                "id": "security",
                "role": "security",
                "model": "openai:broken",
                "fallbackModels": ["openai:broken-too"],
            },
            {"id": "testing", "role": "testing", **working},
        ],
        "judge": working,
        "debate": {"rounds": 1},
    }
    path = tmp_path / "loopback.json"
    path.write_text(json.dumps(doc))
    return str(path)


def asked(server: OpenAIServer, model: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if (r["body"] or {}).get("model") == model]


def test_a_partial_verdict_after_one_agents_provider_fails_every_request(
    server: OpenAIServer, tmp_path: Path
) -> None:
    db = tmp_path / "d.sqlite"
    path = loopback_config(tmp_path)
    common = ["--config", path, "--db", str(db), "--quiet"]
    assert main(["run", *common, "--on-agent-failure", "continue", "--thread-id", "c", "Q?"]) == 0
    for model in ("broken", "broken-too"):  # every retry of the model, then of its fallback
        assert len(asked(server, model)) == RETRIES + 1
        assert {r["fault"] for r in asked(server, model)} == {"500"}
    verdict = stored(db, "c")["solution"]["verdict"]
    assert verdict["panel"]["partial"] == "partial: 2 of 3 agents"
    [missing] = verdict["panel"]["missing"]
    assert missing["agent"] == "security"
    assert missing["models"] == ["openai:broken", "openai:broken-too"]
    assert (
        "security on openai:broken, openai:broken-too: OpenAIAPIError: Error code: 500"
        in missing["error"]
    )
    assert verdict["panel"]["models"] == ["openai:test-model"] and verdict["panel"]["one_model"]
    with TestClient(create_app(str(db))) as client:
        shown = text_of(client.get("/debates/c").text)
    assert (
        "warning: every agent is one model (openai:test-model): its errors are correlated" in shown
    )
    assert "partial partial: 2 of 3 agents missing security from round 1 (propose)" in shown

    # the default: the run stops at the failure (exit 3) and resumes once the provider answers again
    assert main(["run", *common, "--thread-id", "d", "Q?"]) == 3
    assert stored(db, "d")["solution"] is None
    server.model_always.clear()
    assert main(["resume", "d", *common[2:]]) == 0
    whole = stored(db, "d")["solution"]["verdict"]
    assert whole["panel"]["partial"] is None and whole["panel"]["answered"] == 3
    assert "partial" not in whole["confidence"]["how"]


def test_a_resume_after_the_failure_sends_the_failed_agents_models_nothing(
    server: OpenAIServer, tmp_path: Path
) -> None:
    context = Context(config_file=loopback_config(tmp_path), on_agent_failure="continue")
    run = {"configurable": {"thread_id": "k"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "d.sqlite")) as saver:
        graph = compile_debate(checkpointer=saver)
        graph.invoke({"problem": "Q?"}, run, context=context, interrupt_after=["propose"])
        sent = len(asked(server, "broken")) + len(asked(server, "broken-too"))
        assert sent == 2 * (RETRIES + 1) and graph.get_state(run).next
        values = graph.invoke(None, run, context=context)
    assert values["solution"]["verdict"]["panel"]["partial"] == "partial: 2 of 3 agents"
    assert len(asked(server, "broken")) + len(asked(server, "broken-too")) == sent


def test_an_escalate_vote_that_loses_a_voter_settles_on_the_voters_left(tmp_path: Path) -> None:
    """Two voters left who agree settle the vote: a window is never wider than the voters left."""
    doc = {
        "agents": [
            {"id": "kiss", "role": "kiss", "model": "fake:solve=1"},
            {"id": "security", "role": "security", "model": BROKEN},
            {"id": "testing", "role": "testing", "model": "fake:solve=1,words=20"},
        ],
        "judge": {"model": "fake"},
    }
    path, db = tmp_path / "debate.json", tmp_path / "d.sqlite"
    path.write_text(json.dumps(doc))
    argv = [
        "run",
        "--config",
        str(path),
        "--protocol",
        "escalate",
        "--on-agent-failure",
        "continue",
    ]
    assert (
        main([*argv, "--db", str(db), "--thread-id", "e", "--quiet", "What is 17 * 23 - 4?"]) == 0
    )
    verdict = stored(db, "e")["solution"]["verdict"]
    assert verdict["ballot"]["outcome"] == "settled" and verdict["ballot"]["settled_by"] == [
        "kiss",
        "testing",
    ]
    assert verdict["ballot"]["mark"] == "settled by a unanimous vote of 2"
    assert verdict["panel"]["partial"] == "partial: 2 of 3 agents"
