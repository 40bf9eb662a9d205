"""The README's Python API example runs as it stands, with the package's public import."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def python_api_block() -> str:
    """Return the first Python code block of the README's "## Python API" section."""
    text = README.read_text(encoding="utf-8")
    assert "\n## Python API\n" in text, "README.md has no '## Python API' section"
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the '## Python API' section has no ```python block"
    return found.group(1)


def test_the_python_api_example_uses_the_public_import() -> None:
    code = python_api_block()
    assert "from debate_engine import Context, compile_debate" in code
    assert not re.search(r"^\s*(from|import) (graph|nodes|memory|providers|app)\b", code, re.M), (
        "the example imports a source folder instead of the installed package"
    )


def test_the_python_api_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = python_api_block()
    exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    counted = re.search(r"^(\d+) turns$", out, re.M)
    assert counted and int(counted.group(1)) > 0, out
    assert "phase propose round 1" in out and "phase synthesize round 1" in out, out


def test_the_readme_test_command_is_what_ci_runs() -> None:
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in README.read_text(encoding="utf-8") and "make test" in ci


def layout_rows() -> list[tuple[str, str]]:
    """Return the README's layout table: each folder and what its row says it holds."""
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `([\w/]+)/` \| [^|]* \| (.*) \|$", text, re.MULTILINE)
    return [(folder, holds) for folder, holds in rows]


def test_the_layout_table_names_every_package_and_only_files_that_exist() -> None:
    rows = dict(layout_rows())
    assert len(rows) >= 9, "the layout table was not found"
    found = [*ROOT.glob("*/__init__.py"), *ROOT.glob("app/*/__init__.py")]
    packages = {p.parent.relative_to(ROOT).as_posix() for p in found} - {"tests", "bench"}
    assert packages <= set(rows), (
        f"packages the layout table leaves out: {sorted(packages - set(rows))}"
    )
    for folder, holds in rows.items():
        for name in re.findall(r"`([\w/]+\.py)`", holds):
            assert list((ROOT / folder).rglob(name)), (
                f"the layout table's {folder}/ names {name}, which is not there"
            )
