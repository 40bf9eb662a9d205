"""``debate compare``'s parts: tasks, statistics, and the input mistakes it refuses with exit 2."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from debate_engine.app.cli.main import main
from debate_engine.app.measure.compare import stats
from debate_engine.app.measure.compare.protocols import votes_for
from debate_engine.app.measure.compare.tasks import builtin_tasks, is_correct, normalise


def _independent(expression: str) -> int:
    """Return the value of ``a+b*c+d-e*f`` by Python's own parser and compiler, not the generator's arithmetic."""
    tree = ast.parse(expression, mode="eval")
    assert all(
        isinstance(n, ast.Expression | ast.BinOp | ast.Constant | ast.operator)
        for n in ast.walk(tree)
    )
    return int(eval(compile(tree, "<task>", "eval"), {"__builtins__": {}}))  # noqa: S307 - checked above


def test_builtin_arithmetic_is_deterministic_and_right() -> None:
    tasks = builtin_tasks("builtin:arithmetic:50")
    assert (
        tasks == builtin_tasks("builtin:arithmetic:50") and len({t.question for t in tasks}) == 50
    )
    for task in tasks:
        expression = task.question.split("of ")[1].split("?")[0]
        assert int(task.answer) == _independent(expression)
    assert builtin_tasks("builtin:arithmetic:5") == tasks[:5]


def test_answers_are_compared_by_their_kind() -> None:
    assert (
        normalise("4,200.0", "number")
        == normalise("4200", "number")
        == normalise("4.2e3", "number")
    )
    assert normalise("1234567", "number") != normalise("1234568", "number"), "no rounding"
    task = builtin_tasks("builtin:arithmetic:1")[0]
    assert is_correct(task, f"{task.answer}.0") and not is_correct(task, None)


def test_the_statistics_against_known_values() -> None:
    assert stats.binomial_two_sided(0, 5) == pytest.approx(2 / 32)
    assert stats.mcnemar([True, True, False, True], [False, False, False, True]) == {
        "wins": 2,
        "losses": 0,
        "p": 0.5,
    }
    data = [True] * 60 + [False] * 40
    assert stats.bootstrap_interval(data) == stats.bootstrap_interval(data), "seeded"
    low, high = stats.bootstrap_interval(data)
    assert 0.49 < low < 0.6 < high < 0.71
    assert stats.flip_matrix([(False, True), (True, True), (False, True)]) == {
        "wrong_to_right": 2,
        "right_to_wrong": 0,
        "right_to_right": 1,
        "wrong_to_wrong": 0,
    }
    assert (
        stats.confidently_wrong(
            [{"consensus": True, "correct": False}, {"consensus": True, "correct": True}]
        )
        == 0.5
    )
    assert votes_for(1000, 210) == 5 and votes_for(10, 210) == 1


def _tasks_file(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (['{"id": "a", "question": "q", "answer": "1"}', "not json"], "line 2: not JSON"),
        (['{"id": "a", "question": "q"}'], "line 1: missing 'answer'"),
        (
            ['{"id": "a", "question": "q", "answer": "1", "kind": "float"}'],
            "line 1: unknown kind 'float'; use one of",
        ),
        ([""], "the file is empty"),
        (
            ['{"id": "a", "question": "q", "answer": "x", "kind": "number"}'],
            "line 1: answer 'x' is not a number",
        ),
    ],
)
def test_a_bad_tasks_file_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], said: str
) -> None:
    assert main(["compare", _tasks_file(tmp_path, lines), "--model", "fake"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--protocols", "single,socratic"],
            "socratic is not a protocol; use a comma-separated list of single, vote, "
            "debate, debate-vote",
        ),
        (["--votes", "3", "--budget", "auto"], "give one of them"),
        (["--budget", "lots"], "--budget lots"),
        (["--seeds", "0"], "--seeds 0"),
        (["--jobs", "0"], "--jobs 0"),
        (["--protocols", "vote", "--budget", "500"], "needs single's tokens per answer"),
        (["--resume"], "holds no run of this comparison"),
        (
            ["--turns", "4"],
            "--turns 4: only the roundtable takes turns; add roundtable to --protocols",
        ),
        (["--protocols", "roundtable", "--turns", "0"], "--turns 0: give 1 to 10,000 turns"),
        (
            ["--queue"],
            "--queue hands the runs to `debate worker`s, which share a PostgreSQL database",
        ),
        (
            ["--queue", "--jobs", "2", "--db", "postgresql://u@127.0.0.1:9/x"],
            "--jobs 2 with --queue: each worker's",
        ),
        (
            ["--queue", "--max-cost", "1", "--db", "postgresql://u@127.0.0.1:9/x"],
            "no cap over the whole comparison",
        ),
        (
            ["--queue", "--max-tokens", "9000", "--db", "postgresql://u@127.0.0.1:9/x"],
            "--max-tokens 9000 with --queue: the workers run the runs at once, so no cap over the whole",
        ),
        (["--max-tokens", "0"], "--max-tokens 0: give a positive number of tokens"),
    ],
)
def test_bad_flags_exit_2_saying_what_is_valid(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert main(["compare", "builtin:arithmetic:2", "--model", "fake:solve=0.5", *argv]) == 2
    assert said in capsys.readouterr().err


def test_an_unknown_builtin_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "builtin:algebra", "--model", "fake"]) == 2
    assert "use builtin:arithmetic" in capsys.readouterr().err


def test_a_jsonl_file_runs_with_its_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = _tasks_file(
        tmp_path,
        [
            json.dumps(
                {"id": "n1", "question": "What is 2+3*4?", "answer": "14.0", "kind": "number"}
            )
        ],
    )
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "compare",
                tasks,
                "--model",
                "fake:solve=1",
                "--protocols",
                "single",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    found = json.loads(out.read_text())
    assert found["runs"][0]["answer"] == "14" and found["runs"][0]["correct"] is True


def test_the_interval_resamples_whole_tasks_when_a_task_has_several_seeds() -> None:
    from debate_engine.app.measure.compare.stats import bootstrap_interval

    # 10 tasks x 3 seeds, each task all right or all wrong: 10 independent draws, not 30
    correct = [task % 2 == 0 for task in range(10) for _ in range(3)]
    tasks = [str(task) for task in range(10) for _ in range(3)]
    clustered = bootstrap_interval(correct, tasks=tasks)
    naive = bootstrap_interval(correct)
    assert clustered[1] - clustered[0] > naive[1] - naive[0]
    assert bootstrap_interval(correct[::3], tasks=tasks[::3]) == bootstrap_interval(correct[::3])
