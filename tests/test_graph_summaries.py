"""Summaries in the graph: each view uses its own agent's summary, and a failing summarizer loses nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from debate_engine import Context, compile_debate
from debate_engine.providers.fake import FakeChatModel
from tests.support.graph_runs import kinds


def test_the_views_of_a_long_debate_use_summaries_of_their_own_perspective(debate) -> None:
    out = debate(
        rounds=4, agents="architect,security", model="fake:words=200", summary_threshold=1500
    )
    log = out["summary_log"]
    assert log and all(r["status"] == "ok" for r in log)
    by_id = {r["id"]: r for r in log}
    used = [t for t in out["transcript"] if t["view"]["summary_id"]]
    assert {t["speaker"] for t in used} >= {"architect", "security", "judge"}
    assert all(by_id[t["view"]["summary_id"]]["agent_id"] == t["speaker"] for t in used)
    judge = [r for r in log if r["agent_id"] == "judge"]
    synthesis = out["transcript"][-1]
    assert synthesis["kind"] == "synthesis" and synthesis["view"]["summary_id"] == judge[-1]["id"]


def test_summarizing_off_never_summarizes(debate) -> None:
    out = debate(rounds=3, agents="architect,security", model="fake:words=300", summarize=False)
    assert out["summary_log"] == []
    assert all(t["view"]["summary_id"] is None for t in out["transcript"])


def from_config(tmp_path: Path, data: str, **context: Any) -> tuple[Any, dict[str, Any], Context]:
    config = tmp_path / "c.json"
    config.write_text(data)
    return (
        compile_debate(),
        {"configurable": {"thread_id": "t"}},
        Context(config_file=str(config), **context),
    )


def test_a_failing_summarizer_loses_nothing(tmp_path: Path) -> None:
    graph, thread, context = from_config(
        tmp_path,
        '{"agents": [{"id": "a", "role": "architect", "model": "fake"},'
        ' {"id": "b", "role": "security", "model": "fake:fail=summaries"}],'
        '"judge": {"model": "fake"}, "debate": {"rounds": 3, "summarization": {"threshold": 800}}}',
    )
    out = graph.invoke({"problem": "p"}, thread, context=context)
    failed = [r for r in out["summary_log"] if r["status"] == "failed"]
    assert failed and {r["agent_id"] for r in failed} == {"b"}
    assert kinds(out)["refinement"] == 6 and out["solution"] is not None


def test_abort_on_failure_stops_the_run_and_keeps_the_turns(tmp_path: Path) -> None:
    from debate_engine.nodes import SummarizationAborted

    graph, thread, context = from_config(
        tmp_path,
        '{"agents": [{"id": "a", "role": "architect", "model": "fake:fail=summaries"}],'
        '"judge": {"model": "fake"}, "debate": {"rounds": 3, "summarization": {"threshold": 300, '
        '"abortOnFailure": true}}}',
    )
    with pytest.raises(SummarizationAborted):
        graph.invoke({"problem": "p"}, thread, context=context)
    kept = graph.get_state(thread).values["transcript"]
    assert kept and kept[0]["id"] == "proposal:r1:a"


def test_a_custom_summary_prompt_is_really_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = tmp_path / "summary.md"
    prompt.write_text("CUSTOM-SUMMARY-PROMPT: keep every number.")
    graph, thread, context = from_config(
        tmp_path,
        f'{{"agents": [{{"id": "a", "role": "architect", "summaryPromptPath": "{prompt}"}}, '
        '{"id": "b", "role": "kiss"}], "debate": {"rounds": 3, "summarization": {"threshold": 800}}}',
        model="fake",
    )
    seen: list[tuple[str, str]] = []
    original = FakeChatModel._reply

    def spy(self: FakeChatModel, messages: Any, *args: Any) -> Any:
        seen.append((str(messages[0].content), str(messages[-1].content)))
        return original(self, messages, *args)

    monkeypatch.setattr(FakeChatModel, "_reply", spy)
    out = graph.invoke({"problem": "p"}, thread, context=context)
    assert any(r["agent_id"] == "a" for r in out["summary_log"])
    custom = [(system, user) for system, user in seen if "CUSTOM-SUMMARY-PROMPT" in user]
    assert custom, "the custom summary prompt never reached the model"
    # the summary's prompt opens as agent a's own calls do (its system prompt, then the problem), the
    # custom instructions in its task at the end
    agent_a = out["settings"]["agents"][0]["system_prompt"]
    assert all(system == agent_a and user.startswith("## Problem\np") for system, user in custom)
    assert all(
        user.rindex("CUSTOM-SUMMARY-PROMPT") > user.rindex("## Your task") for _, user in custom
    )
