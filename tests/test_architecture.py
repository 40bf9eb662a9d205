"""The house rules, checked: one-way layers, modules that import alone, small modules and functions."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    # package: the packages it may import (besides itself)
    "prompts": set(),
    "memory": set(),
    "providers": {"memory"},
    "calls": {"memory", "providers"},
    "config": {"memory", "prompts", "providers", "calls"},
    "nodes": {"memory", "prompts", "providers", "calls", "config", "graph"},
    "graph": {"memory", "prompts", "providers", "calls", "config", "nodes"},
    "app": {"memory", "prompts", "providers", "calls", "config", "graph", "nodes"},
}
BASE = "debate_engine.errors"
"""The one error base, below every layer: it imports nothing of the engine (``tests/test_errors.py``)."""
# nodes may use only these graph modules: the state and run settings, never a builder.
NODES_MAY_USE = {"debate_engine.graph.state"}
MAX_MODULE_LINES = 400
"""Beyond it a module must say in its docstring why it is one module (size follows cohesion, not a count)."""


def modules() -> list[tuple[str, Path]]:
    out = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = [package, *path.relative_to(ROOT / package).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            out.append((".".join(["debate_engine", *parts]), path))
    return out


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("debate_engine.")}


@pytest.mark.parametrize(("name", "path"), modules(), ids=[m for m, _ in modules()])
def test_imports_point_one_way(name: str, path: Path) -> None:
    package = name.split(".")[1]
    for target in imports_of(path):
        other = target.split(".")[1]
        if other == package or target == BASE:
            continue
        assert other in LAYERS[package], (
            f"{name} imports {target}: {package} may not depend on {other}"
        )
        if package == "nodes" and other == "graph":
            assert target in NODES_MAY_USE, (
                f"{name} imports {target}; nodes use only the state and settings"
            )
        if package == "graph" and other == "nodes":
            assert name in (
                "debate_engine.graph.builder",
                "debate_engine.graph.roundtable",
                "debate_engine.graph.sample",
                "debate_engine.graph.server",
            ), f"{name} imports {target}: only the builders may use nodes"


CLI, VIEWER = "debate_engine.app.cli", "debate_engine.app.viewer"
VIEWER_DOORS = {f"{VIEWER}.serving", f"{VIEWER}.sharing"}
"""What the command line may open of the viewer: ``debate serve`` serves it, ``debate report --html`` writes its
page. Nothing else, and the viewer nothing of the command line: what both need lives below both."""


@pytest.mark.parametrize(
    ("name", "path"),
    [(m, p) for m, p in modules() if m.startswith((f"{CLI}.", f"{VIEWER}."))],
    ids=[m for m, _ in modules() if m.startswith((f"{CLI}.", f"{VIEWER}."))],
)
def test_the_command_line_and_the_viewer_import_nothing_of_each_other(
    name: str, path: Path
) -> None:
    other, allowed = (VIEWER, VIEWER_DOORS) if name.startswith(CLI) else (CLI, set())
    wrong = {t for t in imports_of(path) if t.startswith(other) and t not in allowed}
    assert not wrong, (
        f"{name} imports {sorted(wrong)}: move what both use below both (graph/, app/store/)"
    )


def test_the_viewer_loads_nothing_of_the_command_line_even_through_other_modules() -> None:
    """Importing the viewer whole in a fresh interpreter loads no module of ``app.cli``."""
    import subprocess
    import sys

    code = (
        "import sys, debate_engine.app.viewer.site, debate_engine.app.viewer.serving; "
        f"print(sorted(m for m in sys.modules if m.startswith('{CLI}')))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", found.stdout


def runtime_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Return the modules of ``known`` that ``name`` imports when it runs: at the top or inside a function, not under
    ``if TYPE_CHECKING``. ``from package import module`` names the module; ``from module import name`` the module."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in found if m in known and m != name}


def import_cycles(found: list[tuple[str, Path]]) -> list[list[str]]:
    """Every cycle of runtime imports among ``found`` (strongly connected modules), imports in functions counted."""
    known = {name for name, _ in found}
    return strongly_connected({name: runtime_imports(name, path, known) for name, path in found})


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def strong(v: str) -> None:
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            cycles.append(_pop_component(stack, v))

    for v in graph:
        if v not in order:
            strong(v)
    return [sorted(c) for c in cycles if len(c) > 1]


def _pop_component(stack: list[str], root: str) -> list[str]:
    part = []
    while True:
        w = stack.pop()
        part.append(w)
        if w == root:
            return part


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    """An import inside a function hides a cycle from a fresh interpreter, not from this scan."""
    assert import_cycles(modules()) == []


def test_the_scan_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from debate_engine.scratch.b import g\n\ndef f():\n    return g()\n"
    )
    (tmp_path / "b.py").write_text(
        "def g():\n    from debate_engine.scratch.a import f  # hidden\n    return f\n"
    )
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from debate_engine.scratch.a import f\n"
    )
    planted = [(f"debate_engine.scratch.{n}", tmp_path / f"{n}.py") for n in "abc"]
    assert import_cycles(planted) == [["debate_engine.scratch.a", "debate_engine.scratch.b"]]


START_UP = re.compile(r"#\s*start-up:\s*\S")
"""The reason an import sits inside a function: ``# start-up: what start-up would otherwise load``."""


def imports_in_functions(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """Return the imports inside the functions (and methods) of the module at ``path``."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)]
    return list({id(n): n for n in found}.values())  # a nested function's are found twice


def imports_without_reason(found: list[tuple[str, Path]]) -> dict[str, list[int]]:
    """Return, per module, the lines of its imports inside functions with no ``# start-up:`` reason.

    The reason goes on the import's line; on the first line, ``from x import (  # start-up: ...``, of one
    that spans several.
    """
    missing: dict[str, list[int]] = {}
    for name, path in found:
        lines = path.read_text().splitlines()
        bare = [
            n.lineno for n in imports_in_functions(path) if not START_UP.search(lines[n.lineno - 1])
        ]
        if bare:
            missing[name] = sorted(bare)
    return missing


def test_an_import_inside_a_function_says_why() -> None:
    """Check an import inside a function keeps start-up fast and says so; it never dodges a cycle."""
    assert imports_without_reason(modules()) == {}


def test_the_scan_finds_an_import_inside_a_function_without_a_reason(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import json\n\n"
        "def f():\n    import csv  # start-up: a reason\n    return csv\n\n"
        "class C:\n    def g(self):\n        import signal\n\n"
        "        def h():\n            from debate_engine.scratch import (  # start-up: a reason\n"
        "                b,\n            )\n            from debate_engine.scratch import (\n"
        "                c,  # start-up: not on the first line\n            )\n"
        "            return b, c\n\n        return signal, h\n"
    )
    (tmp_path / "b.py").write_text(
        "def f():\n    import csv  # start-up: a reason\n    return csv\n"
    )
    planted = [(f"debate_engine.scratch.{n}", tmp_path / f"{n}.py") for n in "ab"]
    assert imports_without_reason(planted) == {"debate_engine.scratch.a": [9, 15]}


@pytest.mark.parametrize(("name", "path"), modules(), ids=[m for m, _ in modules()])
def test_modules_stay_cohesive(name: str, path: Path) -> None:
    """Check module size; a function's size is ruff's C901 complexity check, in ``make lint``."""
    source = path.read_text()
    explained = "one module because" in (ast.get_docstring(ast.parse(source)) or "")
    assert explained or len(source.splitlines()) <= MAX_MODULE_LINES, (
        f"{name} has {len(source.splitlines())} lines: split it where its concerns split, or say in its "
        "docstring why it is one module ('one module because ...')"
    )


def test_one_place_builds_a_turn() -> None:
    builders = [
        path.relative_to(ROOT).as_posix()
        for _, path in modules()
        if "Turn(" in path.read_text().replace("new_turn(", "").replace("class Turn(", "")
    ]
    assert builders == ["memory/records.py"], builders


def test_one_module_builds_and_calls_chat_models() -> None:
    """Every model call takes the road: nothing else builds a chat model or invokes one."""
    callers = []
    for name, path in modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("chat_model", "ChatOpenAI", "with_structured_output", "bind_tools"):
                    callers.append(name)
    allowed = {
        "debate_engine.calls.road",
        "debate_engine.providers.factory",
        "debate_engine.providers.fake",
        "debate_engine.memory.message_history",
    }  # messages: the user's own agent's model, for their agents
    assert set(callers) <= allowed, sorted(set(callers) - allowed)


def test_cli_help_does_not_import_langgraph() -> None:
    code = "import sys\nfrom debate_engine.app.cli import main\nprint('langgraph' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr


def test_test_modules_stay_cohesive() -> None:
    """Check the module size rule holds for the tests too (ruff's C901 checks their functions)."""
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        source = path.read_text()
        explained = "one module because" in (ast.get_docstring(ast.parse(source)) or "")
        if not explained and len(source.splitlines()) > MAX_MODULE_LINES:
            offenders.append(f"{path.relative_to(ROOT)} has {len(source.splitlines())} lines")
    assert not offenders, "\n".join(offenders)


SAME_CONCEPT: dict[str, str] = {}
"""File names two modules may share because they hold one concept (none today): name -> why."""


def test_no_two_modules_share_a_file_name() -> None:
    """Check a module's file name says what it holds: a second ``spend.py`` would be a second concept."""
    by_name: dict[str, list[str]] = {}
    for name, path in modules():
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(name)
    repeated = {
        n: found for n, found in by_name.items() if len(found) > 1 and n not in SAME_CONCEPT
    }
    assert not repeated, repeated


def test_the_state_schema_reaches_no_provider() -> None:
    """Check ``graph.state`` and everything it imports, transitively, import nothing from ``providers``.

    The state's schema is read by every node and by the viewer: it must not pull the model factory in.
    Package ``__init__`` modules count, since importing a module runs its package's.
    """
    found = modules()
    known = {name for name, _ in found}
    paths = dict(found)
    seen, todo = set(), ["debate_engine.graph.state"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parents = [".".join(name.split(".")[:i]) for i in range(2, name.count(".") + 1)]
        todo += [p for p in parents if p in known]
        todo += list(runtime_imports(name, paths[name], known))
    assert not [m for m in seen if m.startswith("debate_engine.providers")], sorted(seen)


MAX_IGNORES = 10


def test_few_type_ignores_each_with_its_reason() -> None:
    """Check types hold at the boundaries: at most ten ``type: ignore``, each naming its error and why."""
    found = [
        (path.relative_to(ROOT).as_posix(), n, line)
        for _, path in modules()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "# type: ignore" in line
    ]
    assert len(found) <= MAX_IGNORES, found
    unexplained = [f for f in found if not re.search(r"# type: ignore\[[\w-]+\]  # \S", f[2])]
    assert not unexplained, unexplained
