"""Fuzz the config loader and the command line: every input gets settings or a named error, never a traceback.

Issue 10: "Every input error: exit 2, one message that names the field, the value and the fix, no traceback".
The generators use the real keys of graph/config_file.py and the real flags of ``debate run``, with right and
wrong types, out-of-range numbers, misspelled keys and awkward paths. Paths are written as ``@FUZZ@/...`` and
point into a folder of prepared files (a prompt, an empty file, a non-UTF-8 file, a folder, a missing file).
Inputs that once crashed the engine are pinned with ``@example`` so they run on every test run.

It is one module because the strategies and the properties that draw from them belong together.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from debate_engine.app.cli.main import main
from debate_engine.config.context import Context
from debate_engine.config.resolve import ConfigError, resolve

FUZZ = "@FUZZ@"
ROLES = ["architect", "generalist", "kiss", "performance", "security", "testing"]
NO_HOME = "~nosuchuser-fuzz"
"""``~user`` of a user that does not exist: ``Path.expanduser`` cannot expand it."""
PATHS = [
    f"{FUZZ}/prompt.md",  # a readable UTF-8 prompt
    f"{FUZZ}/empty.md",
    f"{FUZZ}/latin1.md",  # not UTF-8
    f"{FUZZ}/folder",  # a directory
    f"{FUZZ}/missing.md",
    f"{NO_HOME}/prompt.md",
    "",
    ".",
]

# --------------------------------------------------------------------------- shared value strategies

text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
"""Text a command line can carry: no NUL, no lone surrogate."""
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.sampled_from([10**30, -(2**63), 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
)
wild = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
"""Any JSON value: the wrong type for almost every field."""
numbers = st.one_of(
    st.integers(-100, 100),
    st.sampled_from([0, 15, 16, 511, 512, 4096, 8192, 10**7, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["12", "abc", ""]),
)
WORDS = ["0", "1", "3", "abc", "-1", "", "1.5", "\u00b2", "\uff11\uff10", "1000001"]
"""``fake:words=`` values: valid, negative, non-numeric, a superscript digit (isdigit() but not int()), fullwidth."""
models = st.one_of(
    st.sampled_from(
        [
            "fake",
            "gpt-4",
            "openai:gpt-4o-mini",
            "openrouter:x/y",
            "openrouter:",
            "local:smollm2",
            "local:other",
            "bogus:x",
            "",
            "fake:fail=transport",
            "fake:structured=false",
            "fake:bogus=1",
        ]
    ),
    st.sampled_from(WORDS).map(lambda w: f"fake:words={w}"),
    text,
)
paths = st.one_of(st.sampled_from(PATHS), text)


def misspelled(keys: list[str]) -> st.SearchStrategy[str]:
    """Return a real key with one character dropped, doubled or swapped, or a known typo from the issue."""

    def mangle(pair: tuple[str, int, int]) -> str:
        key, i, how = pair
        i %= len(key)
        if how == 0:
            return key[:i] + key[i + 1 :]
        if how == 1:
            return key[:i] + key[i] + key[i:]
        return key[:i] + key[i + 1 : i + 2] + key[i] + key[i + 2 :]

    known = st.sampled_from(
        ["contextWindwo", "summarisation", "maxRound", "temprature", "Rounds", "agent"]
    )
    return known | st.tuples(st.sampled_from(keys), st.integers(0, 30), st.integers(0, 2)).map(
        mangle
    )


def section(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Return a dict of a random subset of ``fields`` (mostly right types, some wrong), and maybe a misspelled key."""
    keys = sorted(fields)
    value_of = {k: st.one_of(v, v, v, wild) for k, v in fields.items()}

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys)))
        out = {k: draw(value_of[k]) for k in chosen}
        for typo in draw(st.lists(misspelled(keys), max_size=1)):
            out[typo] = draw(json_scalar)
        return out

    return build()


SUMMARY_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "enabled": st.booleans(),
    "threshold": numbers,
    "maxLength": numbers,
    "max_length": numbers,
    "method": st.sampled_from(["rolling", "fresh", "length-based", "bogus"]),
    "promptPath": paths,
    "tokenLimit": numbers,
    "triggerTokenRatio": st.floats(-1, 3),
    "resetTokenRatio": st.floats(-1, 3),
    "everyNTurns": numbers,
    "minMessages": numbers,
    "cooldownMessages": numbers,
    "preserveRecent": numbers,
    "maxSummaryChainDepth": numbers,
    "abortOnFailure": st.booleans(),
}
summarization = section(SUMMARY_FIELDS)
AGENT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "id": st.one_of(st.sampled_from([*ROLES, "judge", "user", "a", "a"]), text),
    "name": text,
    "role": st.one_of(st.sampled_from([*ROLES, "judge"]), text),
    "model": models,
    "provider": st.sampled_from(["openai", "openrouter", "local", "fake", "bogus"]),
    "temperature": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10)),
    "enabled": st.booleans(),
    "systemPromptPath": paths,
    "summaryPromptPath": paths,
    "clarificationPromptPath": paths,
    "summarization": summarization,
    "contextWindow": numbers,
    "maxOutputTokens": numbers,
    "fallbackModels": st.lists(models, max_size=2),
}
agent = section(AGENT_FIELDS)
DEBATE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "rounds": numbers,
    "terminationCondition": section(
        {
            "type": st.sampled_from(["fixed", "convergence", "quality", "never"]),
            "threshold": numbers,
        }
    ),
    "synthesisMethod": st.sampled_from(["judge", "voting", "merge", "coin"]),
    "includeFullHistory": st.booleans(),
    "timeoutPerRound": numbers,
    "interactiveClarifications": st.booleans(),
    "clarificationsMaxPerAgent": numbers,
    "summarization": summarization,
    "contextWindow": numbers,
    "maxOutputTokens": numbers,
    "maxConcurrency": numbers,
}
FILE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "agents": st.lists(agent, max_size=4),
    "judge": agent,
    "debate": section(DEBATE_FIELDS),
    "evaluators": st.lists(agent, max_size=2),
    "budget": section({"maxTokens": numbers, "maxCost": numbers}),
    "prices": st.dictionaries(
        st.one_of(models, text), section({"input": numbers, "output": numbers}), max_size=2
    ),
}
config_files = st.one_of(section(FILE_FIELDS), section(FILE_FIELDS), wild)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the files the ``@FUZZ@/...`` paths name."""
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "prompt.md").write_text("You are terse and precise.\n", encoding="utf-8")
    (folder / "empty.md").write_text("", encoding="utf-8")
    (folder / "latin1.md").write_bytes("Caf\u00e9 na\u00efve r\u00e9sum\u00e9".encode("latin-1"))
    (folder / "folder").mkdir()
    (folder / "config.json").write_text(
        json.dumps({"agents": [{"id": "a", "role": "kiss"}, {"id": "b", "role": "security"}]})
    )
    (folder / "broken.json").write_text('{"agents": [', encoding="utf-8")
    (folder / "latin1.json").write_bytes('{"judge": {"name": "Jos\u00e9"}}'.encode("latin-1"))
    (folder / "latin1-prompt.json").write_text(
        json.dumps({"agents": [{"role": "kiss", "systemPromptPath": str(folder / "latin1.md")}]})
    )
    (folder / "problem.txt").write_text("Design a rate limiter.", encoding="utf-8")
    (folder / "env").write_text(
        "DEBATE_MODEL=fake\n# every name here is set already: nothing changes\n"
    )
    return folder


def placed(value: str, folder: Path) -> str:
    return value.replace(FUZZ, str(folder))


# --------------------------------------------------------------------------- the config loader

FUZZ_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@settings(FUZZ_SETTINGS, max_examples=300)
@given(data=config_files)
@example(data={"agents": [{"role": "kiss", "systemPromptPath": f"{NO_HOME}/prompt.md"}]})
@example(data={"agents": [{"role": "kiss", "systemPromptPath": f"{FUZZ}/latin1.md"}]})
@example(data={"debate": {"summarization": {"promptPath": "a\x00b"}}})
@example(data={"agents": [{"role": "kiss", "model": "fake:words=\u00b2"}]})
@example(data={"agents": [{"role": "kiss", "fallbackModels": ["fake:words=\u00b2"]}]})
@example(data={"judge": {"id": "architect", "fallbackModels": [""]}})
@example(data={"agents": [{"id": ["a"], "role": "kiss"}]})
@example(data={"agents": [{"role": ["kiss"]}]})
@example(data={"agents\n": []})
@example(data={"prices": {"\r": None}})
def test_the_config_loader_returns_settings_or_names_every_problem(
    data: Any, fuzz_dir: Path
) -> None:
    path = fuzz_dir / "fuzzed.json"
    path.write_text(placed(json.dumps(data), fuzz_dir), encoding="utf-8")
    try:
        found = resolve(Context(model="fake", config_file=str(path)))
    except ConfigError as exc:
        assert exc.problems, "a ConfigError with no problem in it"
        for problem in exc.problems:  # one line each: a user's text inside it is quoted, never raw
            assert (
                isinstance(problem, str) and len(problem.splitlines()) == 1 and problem.strip()
            ), exc.problems
        return
    # Accepted: the run's model overrides every configured one, and the debate is bounded.
    assert found["agents"], "settings with no agent"
    assert {p["model"] for p in (*found["agents"], found["judge"])} == {"fake"}
    assert 1 <= found["rounds"] <= 10_000
    assert len({p["id"] for p in found["agents"]}) == len(found["agents"]), "two agents share an id"


# --------------------------------------------------------------------------- the command line

value_text = text.filter(lambda s: not s.startswith("-"))
"""A flag's value argparse reads as a value (``-h...`` or ``--h...`` would print the help and exit 0)."""
ints = st.one_of(
    st.integers(-(10**6), 10**7).map(str),
    st.sampled_from(
        ["0", "-1", str(10**30), str(2**63), "", "abc", "1.5", "\uff11\uff10", "\u0663"]
    ),
)
"""Whole numbers of any size and sign, and strings argparse's int() refuses or (fullwidth, Arabic-Indic) accepts."""
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "1e-12", "0.5", "100", "abc", ""]),
)


def mostly(good: list[str], bad: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Return a sensible value two times in three, so most runs get past the first check."""
    return st.one_of(st.sampled_from(good), st.sampled_from(good), bad)


small_or_invalid = st.one_of(
    st.integers(1, 2),
    st.integers(1, 2),
    st.integers(-3, 0),
    st.integers(10_001, 10**12),
    st.just(10**30),
).map(str)
"""Rounds and turns: in range but small, so a dry run simulates little, or out of range."""
cli_paths = st.one_of(
    st.sampled_from(
        [
            f"{FUZZ}/problem.txt",
            f"{FUZZ}/latin1.md",
            f"{FUZZ}/empty.md",
            f"{FUZZ}/folder",
            f"{FUZZ}/missing",
            f"{NO_HOME}/file",
            f"{FUZZ}/env",
        ]
    ),
    value_text,
)
configs = st.one_of(
    st.sampled_from(
        [
            f"{FUZZ}/config.json",
            f"{FUZZ}/config.json",
            f"{FUZZ}/broken.json",
            f"{FUZZ}/latin1.json",
            f"{FUZZ}/latin1-prompt.json",
            f"{FUZZ}/folder",
            f"{FUZZ}/missing.json",
            f"{NO_HOME}/c.json",
        ]
    ),
    value_text,
)
outputs = st.sampled_from(
    [
        f"{FUZZ}/out.json",
        f"{FUZZ}/out.md",
        f"{FUZZ}/out.txt",
        f"{FUZZ}/folder",
        f"{FUZZ}/missing/out.json",
        f"{NO_HOME}/out.json",
    ]
)
agents_flag = st.one_of(
    st.lists(st.sampled_from(ROLES), min_size=1, max_size=4, unique=True),
    st.lists(
        st.one_of(st.sampled_from([*ROLES, "judge", "a", "", " kiss "]), value_text), max_size=4
    ),
).map(",".join)
problems = st.one_of(
    st.sampled_from(["Design a rate limiter", "p", "Ünïcödé 问题 🚀", "line one\nline two", " "]),
    text,
)
ANY_RUN: dict[str, st.SearchStrategy[str] | None] = {
    "--problem-file": cli_paths,
    "--config": configs,
    "--agents": agents_flag,
    "--clarify": None,
    "--thread-id": mostly(["t", "fuzz-1", "Ünï 🚀"], value_text),
    "--max-output-tokens": mostly(["16", "256", "1024"], ints),
    "--context-window": mostly(["512", "2048", "8192", str(10**7)], ints),
    "--max-concurrency": mostly(["1", "2", "8"], ints),
    "--summary-method": mostly(["rolling", "fresh"], st.just("bogus")),
    "--no-summary": None,
    "--max-tokens": mostly(["4000", "100000"], ints),
    "--max-cost": mostly(["0.01", "100"], floats),
    "--order": mostly(["round-robin", "moderator"], st.just("bogus")),
    "--summary-every": mostly(["2", "5"], ints),
    "--quiet": None,
    "-v": None,
    "--env-file": cli_paths,
    "--output": outputs,
    "--report": outputs,
}
"""Flags safe in any run: none of them can make the debate long."""
DRY_RUN: dict[str, st.SearchStrategy[str] | None] = {
    "--model": models.filter(lambda s: not s.startswith("-")),
    "--rounds": small_or_invalid,
    "--turns": small_or_invalid,
    "--protocol": mostly(["phase", "roundtable"], st.just("bogus")),
}


@st.composite
def run_argv(draw: st.DrawFn) -> list[str]:
    """``debate run`` with random flags: a dry run (any model), or a real one-round run on the fake model."""
    dry = draw(st.booleans())
    flags = {**ANY_RUN, **(DRY_RUN if dry else {})}
    argv = ["run"]
    for flag in draw(st.lists(st.sampled_from(sorted(flags)), unique=True, max_size=5)):
        strategy = flags[flag]
        argv += [flag] if strategy is None else [flag, draw(strategy)]
    if dry:
        argv += (
            ["--dry-run"]
            if "--rounds" in argv
            else ["--dry-run", "--rounds", draw(small_or_invalid)]
        )
        if (
            "roundtable" in argv and "--turns" not in argv
        ):  # 100 turns by default: keep the simulation short
            argv += ["--turns", "2"]
    else:
        protocol = draw(st.sampled_from(["phase", "roundtable"]))
        argv += ["--rounds", "1", "--model", "fake", "--protocol", protocol]
        if protocol == "roundtable":
            argv += ["--turns", draw(st.sampled_from(["1", "3"]))]
    problem = draw(st.one_of(problems, problems, problems, st.none()))  # mostly given
    if problem is not None:
        argv += ["--", problem]  # after "--" it may start with a dash
    return argv


@settings(FUZZ_SETTINGS, max_examples=200)
@given(argv=run_argv())
@example(
    argv=[
        "run",
        "--dry-run",
        "--model",
        "fake",
        "--protocol",
        "roundtable",
        "--turns",
        "2",
        "--",
        "p",
    ]
)
@example(
    argv=[
        "run",
        "--model",
        "fake:fail=transport",
        "--dry-run",
        "--rounds",
        "1",
        "--",
        "Design a rate limiter",
    ]
)
@example(
    argv=["run", "--rounds", "1", "--model", "fake", "--env-file", f"{NO_HOME}/.env", "--", "p"]
)
@example(argv=["run", "--dry-run", "--model", "fake:words=\u00b2", "--", "p"])
@example(argv=["run", "--dry-run", "--model", "fake:words=0", "--", "p"])
@example(
    argv=["run", "--rounds", "1", "--model", "fake", "--config", f"{FUZZ}/latin1.json", "--", "p"]
)
@example(
    argv=[
        "run",
        "--rounds",
        "1",
        "--model",
        "fake",
        "--config",
        f"{FUZZ}/latin1-prompt.json",
        "--",
        "p",
    ]
)
def test_debate_run_exits_0_or_2_with_no_traceback(
    argv: list[str], fuzz_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [argv[0], "--db", str(fuzz_dir / "d.sqlite"), *(placed(a, fuzz_dir) for a in argv[1:])]
    capsys.readouterr()
    with contextlib.chdir(fuzz_dir):  # a random relative path names nothing of the repository
        try:
            code: Any = main(argv)
        except SystemExit as exc:  # argparse: an unparsable value or a wrong choice
            code = exc.code
            assert code == 2, f"argparse exited {code}"
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert isinstance(code, int) and code in (0, 2), (code, captured.err[-2000:])
    if code == 2:
        assert captured.err.strip(), "an input error with no message"
    else:  # the projection table, or the solution
        assert captured.out.strip(), "exit 0 with nothing printed"
