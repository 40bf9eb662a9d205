"""Mutation testing of what a change touched: cosmic-ray on the changed lines, run by the fast tests that import them.

    python -m tools.mutate [--base REV] [--module memory/budget.py ...] [--tests tests/test_budget.py ...]

For each engine module the change touches (``git diff BASE`` holds it; ``tests/``, ``bench/`` and ``tools/``
are not engine code), cosmic-ray (https://cosmic-ray.readthedocs.io) makes every one-line mutant of the module,
skips those outside the lines the change added or edited (its git filter), and runs the module's fast tests
against each: the test files that import the module by its full name (``--tests`` names them instead). A
mutant no test fails is a survivor: each is printed as a diff, to be killed by a test or explained as
equivalent. The exit status is 1 when any survived. Sessions are kept in ``build/mutate/`` for
``cr-report``/``cr-html``.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = (
    "app",
    "calls",
    "config",
    "graph",
    "memory",
    "nodes",
    "prompts",
    "providers",
    "debate_engine",
)
"""The folders installed as ``debate_engine`` (``pyproject.toml``'s package-dir)."""
TIMEOUT = 120.0
"""Seconds one mutant's tests may take before it counts as killed (a mutant that hangs them)."""


def changed(base: str) -> list[str]:
    """Return the engine modules ``git diff BASE`` touches (uncommitted changes included)."""
    names = subprocess.run(
        ["git", "diff", "--name-only", base, "--", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [n for n in names if n.split("/")[0] in ENGINE and (ROOT / n).exists()]


def import_name(module: str) -> str:
    """Return a module file's import name: ``memory/budget.py`` is ``debate_engine.memory.budget``."""
    parts = Path(module).with_suffix("").parts
    return ".".join(parts if parts[0] == "debate_engine" else ("debate_engine", *parts))


def covering_tests(module: str) -> list[str]:
    """Return the test files that import ``module`` by its full name, or one of its names from its package
    (``from debate_engine.memory import summarize`` tests ``memory/summarizer.py``), directly or through a
    module of ``tests/support``."""
    name = import_name(module)
    package, _, leaf = name.rpartition(".")
    names = {leaf, *defined(ROOT / module)}
    helpers = [  # the test support modules that use it: their tests use it too
        f"tests.support.{p.stem}"
        for p in (ROOT / "tests" / "support").glob("*.py")
        if imports(p, name, package, names)
    ]
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").glob("test_*.py")
        if imports(p, name, package, names)
        or any(imports(p, h, "tests.support", {h.rpartition(".")[2]}) for h in helpers)
    )


def imports(test: Path, name: str, package: str, names: set[str]) -> bool:
    """Return whether ``test`` imports module ``name``, or any of ``names`` from ``package``."""
    for node in ast.walk(ast.parse(test.read_text())):
        if isinstance(node, ast.Import) and any(a.name == name for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (
            node.module == name
            or (node.module == package and any(a.name in names for a in node.names))
        ):
            return True
    return False


def defined(path: Path) -> list[str]:
    """Return the public functions and classes a module defines at its top level."""
    tree = ast.parse(path.read_text())
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
    ]


def config(module: str, tests: list[str], base: str) -> str:
    """Return a cosmic-ray session's configuration for one module."""
    command = " ".join(
        [
            f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p no:randomly",
            '-m "not integration"',
            *tests,
        ]
    )
    return (
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {TIMEOUT}\n"
        "excluded-modules = []\n"
        f"test-command = '{command}'\n\n"
        '[cosmic-ray.distributor]\nname = "local"\n\n'
        f'[cosmic-ray.filters.git-filter]\nbranch = "{base}"\n'
    )


def run(module: str, tests: list[str], base: str) -> list[str]:
    """Mutate one module's changed lines; return its survivors as printed by ``cr-report``."""
    folder = ROOT / "build" / "mutate"
    folder.mkdir(parents=True, exist_ok=True)
    stem = module.replace("/", "_").removesuffix(".py")
    cfg, session = folder / f"{stem}.toml", folder / f"{stem}.sqlite"
    cfg.write_text(config(module, tests, base))
    session.unlink(missing_ok=True)
    bin_dir = Path(sys.executable).parent
    for step in (
        [bin_dir / "cosmic-ray", "init", cfg, session],
        [bin_dir / "cr-filter-git", "--config", cfg, session],
        [bin_dir / "cosmic-ray", "exec", cfg, session],
    ):
        subprocess.run([str(s) for s in step], cwd=ROOT, check=True)
    report = subprocess.run(
        [str(bin_dir / "cr-report"), str(session), "--surviving-only"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print(report.strip().splitlines()[-3:] and "\n".join(report.strip().splitlines()[-3:]))
    return [block for block in report.split("\n[job-id]") if "SURVIVED" in block]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD~1", help="mutate what changed since this revision")
    parser.add_argument("--module", action="append", help="a module file to mutate (repeatable)")
    parser.add_argument("--tests", action="append", help="a test file to run (repeatable)")
    args = parser.parse_args()
    modules = args.module or changed(args.base)
    if not modules:
        print(f"no engine module changed since {args.base}")
        return
    survivors: list[tuple[str, str]] = []
    for module in modules:
        tests = args.tests or covering_tests(module)
        if not tests:
            print(f"{module}: no fast test imports it; name some with --tests")
            survivors.append((module, "no test imports the module"))
            continue
        print(f"\n== {module}: {len(tests)} test files ({', '.join(tests)})", flush=True)
        survivors += [(module, s) for s in run(module, tests, args.base)]
    print(f"\n{len(survivors)} survivors")
    for module, block in survivors:
        print(f"\n--- {module}\n{block.strip()}")
    sys.exit(1 if survivors else 0)


if __name__ == "__main__":
    main()
