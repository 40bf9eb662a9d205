"""A call that fails or is abandoned at its deadline is charged for what the provider billed, and resumes once.

The issue's case: the server's first reply is an unparseable tool call (billed), the prose retry hangs past the
2-second deadline (abandoned: the provider may finish and bill it), so the call fails and the run exits 3. The
failed call's attempts are kept in the checkpoint with their usage; `debate list` counts them at once; on
resume the call is asked again, and the finished debate's spend holds the failed attempts as well.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from debate_engine.app.cli.main import main
from debate_engine.graph.builder import compile_debate
from tests.support.openai_server import serving


def test_a_failed_call_is_charged_and_counted_and_asked_again_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "d.sqlite")
    with serving(monkeypatch, words=30) as server:
        server.hang_s = 8
        server.faults.extend(["badtool", "hang"])
        code = main(
            [
                "run",
                "--model",
                "openai:test-model",
                "--timeout",
                "2",
                "--agents",
                "architect",
                "--rounds",
                "1",
                "--db",
                db,
                "--thread-id",
                "t",
                "--quiet",
                "Design a cache",
            ]
        )
        assert code == 3
        billed = server.usage_total()  # what the server reported for the unparseable reply
        assert billed > 0
        capsys.readouterr()
        assert main(["list", "--db", db]) == 0
        row = capsys.readouterr().out.splitlines()[1].split("\t")
        listed = int(row[6].split()[0])
        assert listed >= billed, (
            "the failed call's attempts are counted at once, the abandoned one estimated"
        )
        assert main(["resume", "t", "--db", db, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["list", "--db", db]) == 0
    after = int(capsys.readouterr().out.splitlines()[1].split("\t")[6].split()[0])
    assert after > listed, "the finished debate's spend holds the failed attempts and the new ones"
    with SqliteSaver.from_conn_string(db) as saver:
        values = (
            compile_debate(checkpointer=saver)
            .get_state({"configurable": {"thread_id": "t"}})
            .values
        )
    proposal = values["transcript"][0]
    assert proposal["kind"] == "proposal" and proposal["content"]
    assert [a["outcome"] for a in proposal["attempts"]] == ["unparsed", "timeout", "ok"], (
        "asked once more, only"
    )
    charged = sum(
        a["usage"]["total_tokens"]
        for t in values["transcript"]
        for a in t.get("attempts") or []
        if a["usage"]
    ) + sum(
        t["usage"]["total_tokens"]
        for t in values["transcript"]
        if t["usage"] and not t.get("attempts")
    )
    total = values["spend"]["total"]
    assert total["input_tokens"] + total["output_tokens"] >= charged, (
        "every attempt is in the spend"
    )


def test_an_abandoned_request_is_charged_its_prompt_and_whole_allowance_marked_estimated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from debate_engine.calls.road import CallFailed, Request, ask

    with serving(monkeypatch, words=30) as server:
        server.always, server.hang_s = "hang", 5
        request = Request(
            models=("openai:test-model",),
            system="s",
            user="Design a cache " * 20,
            temperature=0,
            max_tokens=77,
            timeout_s=0.5,
        )
        with pytest.raises(CallFailed) as failure:
            ask(request)
    attempt = failure.value.attempts[0]
    assert attempt["outcome"] == "timeout"
    assert attempt["usage"] is not None and attempt["usage"]["output_tokens"] == 77
    assert attempt["usage"]["input_tokens"] > 20 and attempt["usage"].get("estimated") is True


def test_calls_that_fail_on_several_resumes_are_asked_again_each_time_in_a_fixed_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each resume re-runs the phase: its tasks replay in order, and each earlier failure is asked again in a
    wave of its own, so a retry's task is found where it was on the next resume (no reply swaps agents)."""
    db = str(tmp_path / "d.sqlite")
    argv = ["--db", db, "--quiet"]
    with serving(monkeypatch, words=30) as server:
        server.always = "404"  # refused: billed nothing, not retried by the client
        assert (
            main(
                [
                    "run",
                    "--model",
                    "openai:test-model",
                    "--agents",
                    "kiss,security",
                    "--rounds",
                    "1",
                    "--thread-id",
                    "t",
                    *argv,
                    "Design a cache",
                ]
            )
            == 3
        )
        assert main(["resume", "t", *argv]) == 3
        server.always = None
        assert main(["resume", "t", *argv]) == 0
    capsys.readouterr()
    with SqliteSaver.from_conn_string(db) as saver:
        values = (
            compile_debate(checkpointer=saver)
            .get_state({"configurable": {"thread_id": "t"}})
            .values
        )
    proposals = [t for t in values["transcript"] if t["kind"] == "proposal"]
    assert [t["speaker"] for t in proposals] == ["kiss", "security"]
    for turn in proposals:
        assert [a["outcome"] for a in turn["attempts"]] == ["failed", "failed", "ok"]
    assert values["solution"]


def test_a_failed_call_s_cost_shows_in_debate_list_at_once_priced_by_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its tokens were counted at once already; its dollars came only after a resume settled the phase."""
    import json

    config = tmp_path / "debate.json"
    config.write_text(
        json.dumps({"prices": {"openai:test-model": {"input": 10.0, "output": 30.0}}})
    )
    db = str(tmp_path / "d.sqlite")
    with serving(monkeypatch, words=30) as server:
        server.hang_s = 8
        server.faults.extend(["badtool", "hang"])
        run = ["run", "--model", "openai:test-model", "--config", str(config), "--timeout", "2"]
        code = main([*run, "--agents", "architect", "--rounds", "1", "--db", db, "--quiet", "Pick"])
        assert code == 3
    capsys.readouterr()
    assert main(["list", "--db", db, "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["tokens"] > 0 and row["cost"] >= row["tokens"] * 10.0 / 1e6, (
        row["tokens"],
        row["cost"],
    )
