"""The wheel ships the whole tree: pyproject's package list, folders and package data cannot drift from the folders.

pyproject.toml names each package by hand (the folders at the repository root install under
``debate_engine``), so a package added without a line there works in the editable install and is missing
from the wheel. These checks read the tree instead; ``.ci/wheel-check`` builds the wheel and runs it.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOT_SHIPPED = {"tests", "bench", "tools"}
"""Packages at the repository root that stay out of the wheel."""


def setuptools_table() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]


def mapped() -> dict[str, Path]:
    """``package-dir``: each mapped package and its folder."""
    return {name: ROOT / folder for name, folder in setuptools_table()["package-dir"].items()}


def folder_of(package: str) -> Path:
    """Where setuptools reads ``package`` from: its own ``package-dir`` entry, else its nearest mapped parent's
    folder and the rest of its name."""
    parts, roots = package.split("."), mapped()
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in roots:
            return roots[head].joinpath(*parts[n:])
    return ROOT.joinpath(*parts)


def tree() -> dict[str, Path]:
    """Every folder under a mapped root that is a package (an ``__init__.py``) or holds data (prompts, the viewer's
    templates and static files), by its name: setuptools ships a data folder only as a listed package (else it
    warns that the folder "is absent from the `packages` configuration" and will one day leave it out)."""
    found: dict[str, Path] = {}
    for name, root in mapped().items():
        for folder in [root, *root.rglob("*")]:
            if not folder.is_dir() or "__pycache__" in folder.parts:
                continue
            if (folder / "__init__.py").exists() or any(map(is_data, folder.iterdir())):
                found[".".join([name, *folder.relative_to(root).parts])] = folder
    return found


def is_data(path: Path) -> bool:
    """Whether ``path`` is a file the wheel ships that is not Python."""
    return path.is_file() and path.suffix not in (".py", ".pyc")


def test_every_package_of_the_tree_is_listed_and_nothing_else() -> None:
    listed = set(setuptools_table()["packages"])
    assert sorted(set(tree()) - listed) == [], "folders missing from [tool.setuptools] packages"
    assert sorted(listed - set(tree())) == [], "listed packages with no folder"


def test_each_listed_package_is_read_from_its_own_folder() -> None:
    assert {name: folder_of(name) for name in setuptools_table()["packages"]} == tree()


def test_every_package_at_the_root_is_mapped_except_the_tests_the_bench_and_the_tools() -> None:
    at_root = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} - NOT_SHIPPED
    assert {p.relative_to(ROOT).parts[0] for p in mapped().values()} == at_root


def test_every_file_that_is_not_python_is_package_data() -> None:
    """The prompts above all: a ``.md`` file left out of package data fails only in an installed wheel."""
    data: dict[str, list[str]] = setuptools_table().get("package-data", {})
    left_out = [
        str(path.relative_to(ROOT))
        for name, folder in tree().items()
        for path in sorted(folder.iterdir())
        if is_data(path)
        and not any(fnmatch.fnmatch(path.name, pattern) for pattern in data.get(name, []))
    ]
    assert left_out == []
    assert any(folder.glob("*.md") for folder in tree().values())  # the prompts are found at all
