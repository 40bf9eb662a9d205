"""``debate eval``: evaluators score a finished debate; unparsable ones are named, marked failed and left out.

It is one module because every test here runs ``debate eval`` over the same prepared debate.
"""

from __future__ import annotations

import csv
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debate_engine.app.cli.main import main
from debate_engine.app.measure.evaluate import CRITERIA, Evaluation, Evaluator, build_prompt
from debate_engine.app.reports.markdown import export_state, values_from_export
from debate_engine.calls.schemas import tool_tokens
from debate_engine.memory import BudgetError, count_messages, count_tokens
from debate_engine.prompts import load_prompt
from debate_engine.providers import factory
from tests.support import openai_server
from tests.support.openai_server import OpenAIServer

NAMES = [
    "functional_completeness",
    "performance_scalability",
    "security",
    "maintainability",
    "regulatory_compliance",
    "testability",
    "overall",
]
FAKE_SCORE = 7
"""The fake model fills an int field bounded 1..10 with low + (high - low) * 7 // 10 = 1 + 63 // 10 = 7."""
SERVER_SCORES = {
    "functional_completeness": 2,
    "performance_scalability": 9,
    "security": 4,
    "maintainability": 10,
    "regulatory_compliance": 1,
    "testability": 6,
    "overall": 3,
}
AVERAGES = {
    "functional_completeness": 4.5,
    "performance_scalability": 8.0,
    "security": 5.5,
    "maintainability": 8.5,
    "regulatory_compliance": 4.0,
    "testability": 6.5,
    "overall": 5.0,
}
"""(7 + SERVER_SCORES[c]) / 2, worked out by hand."""

schema_tokens = partial(tool_tokens, Evaluation)  # the evaluation's tool definition, sent as prompt


def finished(tmp_path: Path, name: str = "debate.json", thread: str = "one") -> Path:
    """Return a finished one-round debate of two agents on the fake model, saved as ``debate run --output`` writes it."""
    out = tmp_path / name
    args = [
        "run",
        "--model",
        "fake",
        "--rounds",
        "1",
        "--agents",
        "kiss,testing",
        "--quiet",
        "--thread-id",
        thread,
        "--db",
        str(tmp_path / "d.sqlite"),
        "--output",
        str(out),
        "Design a rate limiter",
    ]
    assert main(args) == 0
    return out


def evaluation(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any] | None, str]:
    capsys.readouterr()
    code = main(["eval", *args])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else None), captured.err


def config(tmp_path: Path, *evaluators: dict[str, Any]) -> str:
    path = tmp_path / "evaluators.json"
    path.write_text(json.dumps({"evaluators": list(evaluators)}))
    return str(path)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Return the loopback OpenAI-compatible server; its evaluation tool calls carry ``server.scores`` (or ``.broken``)."""
    original = openai_server._fake

    def answer(schema: dict[str, Any], defs: dict[str, Any], name: str, depth: int = 0) -> Any:
        value = original(schema, defs, name, depth)
        if name == "Evaluation" and depth == 0:
            return (
                {"functional_completeness": "excellent"} if srv.broken else {**value, **srv.scores}
            )
        return value

    monkeypatch.setattr(openai_server, "_fake", answer)
    with OpenAIServer(words=20) as srv:
        srv.scores, srv.broken = dict(SERVER_SCORES), False  # type: ignore[attr-defined]
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-eval-0000")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv
    # chat_model caches clients by spec and settings, not by OPENAI_API_KEY / OPENAI_BASE_URL: a client made
    # here would carry this server's address and key into later tests in this process.
    factory._build.cache_clear()


def test_one_fake_evaluator_scores_every_criterion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, err = evaluation(capsys, str(finished(tmp_path)))
    assert code == 0, err
    assert doc is not None and list(CRITERIA) == NAMES and doc["criteria"] == NAMES
    [record] = doc["evaluators"]
    assert (record["id"], record["model"], record["status"], record["error"]) == (
        "evaluator",
        "fake",
        "ok",
        None,
    )
    assert {c: v["score"] for c, v in record["criteria"].items()} == dict.fromkeys(
        NAMES, FAKE_SCORE
    )
    assert all(v["justification"].strip() for v in record["criteria"].values())
    assert doc["averages"] == dict.fromkeys(NAMES, 7.0)
    assert (doc["parsed"], doc["failed"], doc["source"], doc["problem"]) == (
        1,
        0,
        str(tmp_path / "debate.json"),
        "Design a rate limiter",
    )
    # which model and why (no --model: the debate's own judge's), then one line as the evaluator ends
    assert err.splitlines() == [
        "evaluator evaluator: fake (the debate's judge model)",
        "evaluator evaluator (fake): overall 7/10, 0.0 s",
    ]


def test_two_evaluators_average_per_criterion_and_append_csv_rows_under_one_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: Any
) -> None:
    debate = str(finished(tmp_path))
    evaluators = config(
        tmp_path, {"id": "offline", "model": "fake"}, {"id": "remote", "model": "openai:test-model"}
    )
    table, md = tmp_path / "scores.csv", tmp_path / "scores.md"
    for _ in range(2):
        code, doc, err = evaluation(
            capsys, debate, "--config", evaluators, "--csv", str(table), "--md", str(md)
        )
        assert code == 0, err
    assert doc is not None
    scores = {r["id"]: {c: v["score"] for c, v in r["criteria"].items()} for r in doc["evaluators"]}
    assert scores == {"offline": dict.fromkeys(NAMES, FAKE_SCORE), "remote": SERVER_SCORES}
    assert doc["averages"] == AVERAGES

    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0] == ["evaluated_at", "source", "problem", "evaluators", "parsed", *NAMES]
    assert len(rows) == 3, "the header is written once, then one row per evaluation"
    for row in rows[1:]:
        assert row[1:5] == [debate, "Design a rate limiter", "2", "2"]
        assert [float(x) for x in row[5:]] == [AVERAGES[c] for c in NAMES]

    lines = md.read_text().splitlines()
    assert "| criterion | offline (`fake`) | remote (`openai:test-model`) | average |" in lines
    assert "| functional completeness | 7 | 2 | 4.50 |" in lines
    assert "| performance and scalability | 7 | 9 | 8.00 |" in lines
    assert "| overall | 7 | 3 | 5.00 |" in lines

    body = server.requests[-1]["body"]
    assert body["tool_choice"] == {
        "type": "function",
        "function": {"name": "Evaluation"},
    }  # function calling
    assert [t["function"]["name"] for t in body["tools"]] == ["Evaluation"]


def test_an_unparsable_evaluator_is_named_marked_failed_and_left_out_of_the_averages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: Any
) -> None:
    server.broken = True
    evaluators = config(
        tmp_path, {"id": "offline", "model": "fake"}, {"id": "remote", "model": "openai:test-model"}
    )
    code, doc, err = evaluation(capsys, str(finished(tmp_path)), "--config", evaluators)
    assert code == 0, err
    assert doc is not None
    remote = next(r for r in doc["evaluators"] if r["id"] == "remote")
    assert remote["status"] == "failed" and remote["criteria"] == {}
    assert "could not be parsed" in remote["error"]
    assert "evaluator remote (openai:test-model) failed: the reply could not be parsed" in err
    assert doc["averages"] == dict.fromkeys(NAMES, 7.0), (
        "a failed evaluator counted as zero would give 3.5"
    )
    assert (doc["parsed"], doc["failed"]) == (1, 1)


FAILING = {
    "no structured output": "fake:structured=false",
    "malformed tool arguments": "openai:test-model",
    "provider down": "fake:fail=transport",
}


@pytest.mark.parametrize("how", list(FAILING))
def test_exit_3_when_no_evaluator_parses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: Any, how: str
) -> None:
    server.broken = True
    model = FAILING[how]
    table, md = tmp_path / "scores.csv", tmp_path / "scores.md"
    code, doc, err = evaluation(
        capsys, str(finished(tmp_path)), "--model", model, "--csv", str(table), "--md", str(md)
    )
    assert code == 3
    assert doc is not None and doc["parsed"] == 0 and doc["evaluators"][0]["status"] == "failed"
    assert doc["averages"] == dict.fromkeys(NAMES, None)
    assert (
        f"evaluator evaluator ({model}) failed" in err
        and "no evaluator's reply could be parsed" in err
    )
    assert not table.exists(), "no row of empty averages"
    assert "| security | failed | n/a |" in md.read_text().splitlines()


def test_a_failing_model_falls_back_to_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluators = config(
        tmp_path, {"id": "x", "model": "fake:fail=transport", "fallbackModels": ["fake"]}
    )
    code, doc, err = evaluation(capsys, str(finished(tmp_path)), "--config", evaluators)
    assert code == 0 and doc is not None, err
    assert (doc["evaluators"][0]["model"], doc["evaluators"][0]["status"]) == ("fake", "ok")


def test_a_stored_thread_is_evaluated_like_its_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finished(tmp_path, thread="kept")
    output = tmp_path / "eval.json"
    code, doc, err = evaluation(
        capsys, "--thread", "kept", "--db", str(tmp_path / "d.sqlite"), "--output", str(output)
    )
    assert code == 0 and doc is None, err  # --output: nothing on stdout
    saved = json.loads(output.read_text())
    assert saved["source"] == "thread:kept" and saved["averages"] == dict.fromkeys(NAMES, 7.0)


INPUT_ERRORS: list[tuple[str, Any, str]] = [
    ("nothing named", lambda p: [], "name the debate"),
    ("both named", lambda p: [str(finished(p)), "--thread", "one"], "not both"),
    ("missing file", lambda p: [str(p / "nope.json")], "cannot read"),
    ("not JSON", lambda p: [str(p / "bad.json")], "is not valid JSON (line 1, column 2"),
    ("not a debate", lambda p: [str(p / "other.json")], "is not a debate"),
    (
        "unknown thread",
        lambda p: ["--thread", "ghost", "--db", str(p / "d.sqlite")],
        "no debate 'ghost'",
    ),
    (
        "bad evaluator model",
        lambda p: [str(finished(p)), "--config", config(p, {"model": "acme:big"})],
        "evaluators[0] (evaluator1): model 'acme:big' has unknown provider 'acme'",
    ),
    (
        "same id twice",
        lambda p: [str(finished(p)), "--config", config(p, {"id": "x"}, {"id": "x"})],
        "'x' is used twice",
    ),
    (
        "window too small",
        lambda p: [str(finished(p)), "--config", config(p, {"contextWindow": 1500})],
        "leaves",
    ),
    (
        "missing key",
        lambda p: [str(finished(p)), "--model", "openai:gpt-4o-mini"],
        "OPENAI_API_KEY is not set",
    ),
]


@pytest.mark.parametrize(
    ("case", "args", "message"), INPUT_ERRORS, ids=[c[0] for c in INPUT_ERRORS]
)
def test_input_errors_exit_2_with_a_named_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, args: Any, message: str
) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"averages": {}}))
    code, doc, err = evaluation(capsys, *args(tmp_path))
    assert code == 2, (case, err)
    assert doc is None and err.startswith("error:") and message in err, err
    assert "Traceback" not in err


def test_an_unfinished_debate_has_nothing_to_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "d.sqlite")
    assert (
        main(
            [
                "run",
                "--model",
                "fake:fail=transport",
                "--agents",
                "kiss",
                "--rounds",
                "1",
                "--db",
                db,
                "--thread-id",
                "cut",
                "--quiet",
                "p",
            ]
        )
        == 3
    )
    code, _, err = evaluation(capsys, "--thread", "cut", "--db", db)
    assert code == 2 and "thread:cut has no solution to evaluate yet" in err


def test_a_typo_in_an_evaluator_entry_suggests_the_agent_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = evaluation(
        capsys, str(finished(tmp_path)), "--config", config(tmp_path, {"temprature": 0.1})
    )
    assert code == 2 and "evaluators[0].temprature: unknown key" in err
    assert "did you mean 'temperature'?" in err


# --------------------------------------------------------------------------- the prompt within the budget


@pytest.fixture(scope="module")
def long_debate() -> dict[str, Any]:
    """Four rounds of 200-word turns, summarized: far more than a small evaluator window holds."""
    from debate_engine import Context, compile_debate

    out = compile_debate().invoke(
        {"problem": "Design a rate limiter"},
        {"configurable": {"thread_id": "t"}},
        context=Context(
            model="fake:words=200", rounds=4, agents="architect,security", summary_threshold=1500
        ),
    )
    values = values_from_export(json.loads(json.dumps(export_state(out))))
    assert any(r["agent_id"] == "judge" and r["status"] == "ok" for r in values["summary_log"])
    return values


def test_a_long_debate_reaches_a_small_evaluator_through_its_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: Any, long_debate: dict[str, Any]
) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps(export_state(long_debate)))
    window, reserve = 4000, 500
    small = config(
        tmp_path,
        {
            "id": "small",
            "model": "openai:test-model",
            "contextWindow": window,
            "maxOutputTokens": reserve,
        },
    )
    code, doc, err = evaluation(capsys, str(path), "--config", small)
    assert code == 0, err
    body = server.requests[-1]["body"]
    system, user = (m["content"] for m in body["messages"])
    sent = count_messages(system, user) + count_tokens(json.dumps(body["tools"][0]))
    whole = sum(t["tokens"] for t in long_debate["transcript"])
    assert whole > window, "the debate alone must overflow the window"
    assert sent <= window - reserve
    assert body["max_completion_tokens"] == reserve or body.get("max_tokens") == reserve
    assert "Summary of the debate as judge saw it" in user
    through = int(user.split("Summary of the debate as judge saw it, up to turn ")[1].split(":")[0])
    after = [
        t for t in long_debate["transcript"] if t["seq"] >= through and t["kind"] != "synthesis"
    ]
    shown = [t for t in after if t["content"] in user]
    assert len(shown) == len(after) or f"[{len(after) - len(shown)} earlier turns left out" in user
    assert "Functional completeness: does the solution do everything" in user, (
        "the rubric is never cut"
    )
    assert (
        doc is not None
        and doc["evaluators"][0]["prompt_tokens"] == count_messages(system, user) + schema_tokens()
    )


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    window=st.integers(min_value=1024, max_value=40_000),
    share=st.floats(min_value=0.02, max_value=0.5),
)
def test_every_evaluator_prompt_fits_its_budget(
    long_debate: dict[str, Any], window: int, share: float
) -> None:
    reserve = max(16, int(window * share))
    evaluator = Evaluator("e", ("fake",), 0.2, window, reserve, "Review it.")
    try:
        system, user, used = build_prompt(long_debate, evaluator)
    except BudgetError as exc:
        assert "leaves" in str(exc)
        rubric = count_tokens(load_prompt("phases/evaluate")) + count_tokens(
            load_prompt("phases/rubric")
        )
        assert window - reserve < rubric + schema_tokens() + 200 + 64, (
            "refused a window that had room"
        )
        return
    assert used == count_messages(system, user) + schema_tokens() <= window - reserve
    assert long_debate["solution"]["description"][:30] in user or "tokens shortened" in user


# --------------------------------------------------------------------------- the embedded model


@pytest.mark.integration
@pytest.mark.embedded_model
def test_the_embedded_model_evaluates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs `pip install -e '.[local]'`")
    code, doc, err = evaluation(capsys, str(finished(tmp_path)), "--model", "local:smollm2")
    assert doc is not None and doc["evaluators"][0]["model"] == "local:smollm2", err
    record = doc["evaluators"][0]
    assert (
        record["prompt_tokens"] <= 3072 - 768
    )  # the embedded window for budgets, less a quarter for the answer
    if (
        code == 0
    ):  # the grammar keeps its tool call valid JSON; a 135M model may still fail, and must say so
        assert all(1 <= v["score"] <= 10 for v in record["criteria"].values())
    else:
        assert code == 3 and "evaluator evaluator (local:smollm2) failed" in err
