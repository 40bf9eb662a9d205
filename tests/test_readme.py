"""The README's Python API example runs as it stands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_python_api_example_runs(capsys) -> None:
    section = README.read_text().split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "turns" in out and "phase propose round 1" in out


def test_the_readme_test_command_is_what_ci_runs() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make test" in README.read_text() and "make test" in ci
