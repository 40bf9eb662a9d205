"""Types at the boundaries: LangGraph's untyped values become a typed ``RunRecord`` in one place.

The report, the figures, the charts, the list and the exports take and return typed
records; ``Any`` is left where LangGraph, JSON or argparse hand over untyped data. An old
checkpoint (no ``forked_from``, no ``stop_reason``, no cache figures) reads as it always did.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from debate_engine.app.cli.list import row_from
from debate_engine.app.reports.figures import figures, totals
from debate_engine.app.reports.markdown import export_state, render_report, values_from_export
from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.verdict_section import verdict_line

ROOT = Path(__file__).resolve().parents[1]
TYPED = sorted((ROOT / "app" / "reports").glob("*.py")) + [
    ROOT / "app" / "cli" / "list.py",
    ROOT / "app" / "cli" / "outputs.py",
]
"""The modules that read a typed record of the run."""
BOUNDARY = {
    ("record.py", "record_of", "values"): "LangGraph's values (or JSON's) become the record here",
    ("markdown.py", "values_from_export", "data"): "an --output JSON file, read from disk",
    ("list.py", "register", "sub"): "argparse's subparsers action",
}
"""The only parameters of a public function that may say ``Any``, and why."""


def signatures(path: Path) -> list[tuple[str, str, str]]:
    """Return each function's ``(name, parameter or 'return', annotation)`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            args += [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
            found += [(node.name, a.arg, ast.unparse(a.annotation)) for a in args if a.annotation]
            if node.returns is not None:
                found.append((node.name, "return", ast.unparse(node.returns)))
    return found


def untyped(paths: list[Path]) -> list[str]:
    """Return every public signature that says ``Any`` off the boundary, and any ``dict[str, Any]`` at all."""
    return [
        f"{path.name}: {name}({part}: {annotation})"
        for path in paths
        for name, part, annotation in signatures(path)
        if "dict[str, Any]" in annotation or off_boundary(path.name, name, part, annotation)
    ]


def off_boundary(module: str, name: str, part: str, annotation: str) -> bool:
    """Return True for ``Any`` in a public function's signature that is not a named boundary."""
    public = not name.startswith("_")
    return public and "Any" in annotation and (module, name, part) not in BOUNDARY


def test_the_readers_of_a_run_take_and_return_typed_records() -> None:
    """Check no signature of the report, figures, charts, list or exports says ``dict[str, Any]``."""
    assert untyped(TYPED) == []


def test_the_scan_finds_an_untyped_signature(tmp_path: Path) -> None:
    """Check the scan sees ``dict[str, Any]`` anywhere and ``Any`` in a public function off the boundary."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def shown(values: dict[str, Any]) -> str: ...\n"
        "def _private(row: dict[str, Any]) -> None: ...\n"
        "async def rows(db: str) -> list[Any]: ...\n"
        "def _legacy(record: Mapping[str, Any]) -> int: ...\n"
        "def register(sub: Any) -> None: ...\n"
    )
    assert untyped([planted]) == [
        "planted.py: shown(values: dict[str, Any])",
        "planted.py: _private(row: dict[str, Any])",
        "planted.py: rows(return: list[Any])",
        "planted.py: register(sub: Any)",  # the boundary is list.py's, not any module's
    ]


def aged(values: dict[str, Any]) -> dict[str, Any]:
    """Return ``values`` as an older version stored them: no fork origin, no stop reason, no cache figures."""
    old = copy.deepcopy(values)
    old.pop("forked_from", None)
    old.pop("stop_reason", None)
    for key in ("cached_tokens", "saved"):
        old["status"].pop(key, None)
    spend = old["spend"]
    for tally in [spend["total"], *spend["by_agent"].values(), *spend["by_phase"].values()]:
        for key in ("cache_read_tokens", "cache_write_tokens", "saved"):
            tally.pop(key, None)
    old["solution"]["verdict"].pop("judge_answer", None)
    return old


def defaulted(old: dict[str, Any]) -> dict[str, Any]:
    """Return an old checkpoint's values with every missing key at the value its absence stood for."""
    new = copy.deepcopy(old)
    new |= {"forked_from": None, "stop_reason": None}
    new["status"] |= {"cached_tokens": 0, "saved": 0.0}
    new["spend"]["total"] |= {"cache_read_tokens": 0, "cache_write_tokens": 0, "saved": 0.0}
    return new


@pytest.fixture
def finished(debate: Any) -> dict[str, Any]:
    """Return a finished fake debate's values, as LangGraph hands them over."""
    values: dict[str, Any] = debate(rounds=2, agents="architect,security")
    assert values["solution"]["verdict"], "this debate must reach a verdict"
    return values


def test_record_of_neither_copies_nor_changes_the_values(finished: dict[str, Any]) -> None:
    """Check the boundary is a cast: the record is the values themselves, untouched."""
    old = aged(finished)
    before = copy.deepcopy(old)
    record = record_of(old)
    assert record is old and old == before
    assert record_of(MappingProxyType(old)) == old  # any mapping: a plain dict of it


def test_an_old_checkpoint_reports_as_its_missing_keys_defaulted(finished: dict[str, Any]) -> None:
    """Check an old checkpoint's report, figures and verdict line are those of its values with defaults."""
    old = aged(finished)
    assert "forked_from" not in old and "stop_reason" not in old
    assert "cached_tokens" not in old["status"]
    record, filled = record_of(old), record_of(defaulted(old))
    assert render_report(record) == render_report(filled)
    assert render_report(record) == render_report(old)  # what the untyped values rendered
    assert figures(record) == figures(filled)
    assert totals(record)["cached_tokens"] == 0 and totals(record)["saved"] == 0.0
    assert verdict_line(record) == verdict_line(filled)
    assert "cached prompt tokens | 0 (the provider reported none)" in render_report(record)


def test_an_old_checkpoint_exports_and_reads_back_alike(finished: dict[str, Any]) -> None:
    """Check the export of an old checkpoint names its missing keys None, and reads back to the same report."""
    old = record_of(aged(finished))
    exported = export_state(old)
    assert exported["forked_from"] is None and exported["stop_reason"] is None
    again = values_from_export(json.loads(json.dumps(exported)))
    assert render_report(again) == render_report(old)


def test_an_old_status_record_lists_with_no_cache_figures(finished: dict[str, Any]) -> None:
    """Check ``debate list``'s row of a status record that predates cache figures and forks."""
    status = aged(finished)["status"]
    row = row_from("t-1", status, "done")
    assert (row["cached_tokens"], row["saved"], row["forked_from"]) == (0, 0.0, None)
    assert list(row) == [
        "thread",
        "updated_at",
        "status",
        "round",
        "rounds",
        "phase",
        "turns",
        "tokens",
        "cost",
        "cached_tokens",
        "saved",
        "forked_from",
        "problem",
    ]  # the --json line's keys, in the order a script has always read them
