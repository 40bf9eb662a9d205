"""The benchmarks against an earlier commit, in one run: this tree's figures, REV's, and their ratio.

    python -m bench.against REV [--only startup --only storage --only overhead] [--repeat 2] [--quick]

REV's tree is exported with ``git archive`` and assembled into an importable ``debate_engine`` the way
its own ``pyproject.toml`` maps the root folders; this tree is assembled the same way, and both are
compiled to bytecode first. Each benchmark then runs as ``python -m bench --only NAME`` from this
tree (the same benchmark code both times: only the engine differs) with ``PYTHONPATH`` on one
assembly or the other, alternating, ``--repeat`` times each. The command line a benchmark starts is
the assembly's own entry point (``DEBATE_BENCH_CLI``).

Every number the two runs print in the same cell of the same table is shown as this tree's value
(the median of its runs), REV's, and this / REV. Cells that are equal in every run (the shape of a
table: counts, sizes asked for) are left out. Nothing asserts.

Each run's line names the machine's load average as it starts: wall times measured under a load of several
processes a core are the load's as much as the engine's. The start-up, waves and overhead benchmarks print CPU
seconds beside their wall times; a wall-time ratio the CPU ratio does not share is the machine's.
"""

from __future__ import annotations

import argparse
import compileall
import io
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

from bench.common import table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["startup", "storage", "overhead"]
Tables = dict[tuple[str, int], list[list[str]]]
"""Each printed table by (section, index in its section): its header row, then its rows."""
NUMBER = re.compile(r"^[^\d-]*(-?[\d,]*\.?\d+)\s*(x|%|ms|s|KB|kB)?$")


def export(rev: str, into: Path) -> Path:
    """Write REV's tree into ``into`` and return it."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def assemble(tree: Path, into: Path) -> Path:
    """Lay out ``tree`` as its pyproject installs it: ``into/debate_engine/<sub>`` linked to each root folder."""
    config = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["setuptools"]
    package = into / "debate_engine"
    package.mkdir(parents=True)
    for name, folder in sorted(config["package-dir"].items()):
        parts = name.split(".")[1:]
        if not parts:
            for item in (tree / folder).iterdir():
                (package / item.name).symlink_to(item)
            continue
        target = package.joinpath(*parts)
        if not target.exists():  # a nested package inside a linked folder is there already
            target.symlink_to(tree / folder)
    for folder in set(config["package-dir"].values()):  # compileall does not follow linked folders
        compileall.compile_dir(str(tree / folder), quiet=2, workers=2)
    return into


def entry_point(tree: Path, into: Path) -> Path:
    """Write a ``debate`` script for the assembly: what pip's console script does, from its pyproject."""
    spec = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["scripts"]["debate"]
    module, function = spec.split(":")
    script = into / "debate"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n"
    )
    script.chmod(0o755)
    return script


def tables(output: str) -> Tables:
    """Return the Markdown tables of a benchmark's output, keyed by section and position."""
    found: Tables = {}
    section, index, rows = "", 0, []
    for line in [*output.splitlines(), ""]:
        if line.startswith("## "):
            section, index = line[3:].strip(), 0
        if line.startswith("|"):
            if not line.startswith("|---"):
                rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            found[(section, index)] = rows
            index, rows = index + 1, []
    return found


def number(cell: str) -> float | None:
    """Return the number a cell shows (``1.23x``, ``12.5%``, ``1,234``, ``0.95 s``), or None."""
    match = NUMBER.match(cell.replace("`", ""))
    return float(match.group(1).replace(",", "")) if match else None


def benches(into: Path) -> Path:
    """Return a folder holding only this tree's ``bench`` and ``tests``: run from it, nothing shadows an assembly."""
    into.mkdir()
    for name in ("bench", "tests"):
        (into / name).symlink_to(ROOT / name)
    return into


def run(name: str, code: Path, assembly: Path, cli: Path, quick: bool) -> str:
    """Run one benchmark on one assembly; return what it printed."""
    env = {**os.environ, "PYTHONPATH": str(assembly), "DEBATE_BENCH_CLI": str(cli)}
    command = [sys.executable, "-m", "bench", "--only", name, *(["--quick"] if quick else [])]
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"bench {name} failed on {assembly}:\n{done.stderr[-3000:]}")
    return done.stdout


def compare(name: str, ours: list[Tables], theirs: list[Tables], rev: str) -> None:
    """Print every numeric cell that differs between the runs: ours, theirs, ours / theirs."""
    rows = []
    for key, shape in ours[0].items():
        if not all(key in t and len(t[key]) == len(shape) for t in [*ours, *theirs]):
            continue
        header = shape[0]
        for r, row in enumerate(shape[1:], start=1):
            for c, label in enumerate(header[1:], start=1):
                mine = [number(t[key][r][c]) if c < len(t[key][r]) else None for t in ours]
                old = [number(t[key][r][c]) if c < len(t[key][r]) else None for t in theirs]
                if None in mine or None in old or len({*mine, *old}) == 1:
                    continue
                a = statistics.median([m for m in mine if m is not None])
                b = statistics.median([o for o in old if o is not None])
                ratio = f"{a / b:.2f}x" if b else "-"
                rows.append([key[0][:40], row[0][:60], label[:30], f"{a:g}", f"{b:g}", ratio])
    print(f"## {name}: this tree against {rev}\n")
    table(["section", "row", "column", "this tree", rev, "this / " + rev], rows)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.against", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("rev", help="the commit to measure against, e.g. HEAD~1 or a hash")
    parser.add_argument("--only", action="append", help="a benchmark of `python -m bench`")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side (default 2)")
    parser.add_argument("--quick", action="store_true", help="pass --quick to the benchmarks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
        folder = Path(tmp)
        old_tree, code = export(args.rev, folder / "tree"), benches(folder / "code")
        sides = {
            "this tree": (assemble(ROOT, folder / "ours"), entry_point(ROOT, folder / "ours")),
            args.rev: (
                assemble(old_tree, folder / "theirs"),
                entry_point(old_tree, folder / "theirs"),
            ),
        }
        for name in args.only or DEFAULT:
            outputs: dict[str, list[Tables]] = {side: [] for side in sides}
            for n in range(args.repeat):
                for side, (assembly, cli) in sides.items():
                    load = os.getloadavg()[0]
                    print(
                        f"({name}: {side}, run {n + 1} of {args.repeat}, load {load:.1f})",
                        flush=True,
                    )
                    outputs[side].append(tables(run(name, code, assembly, cli, args.quick)))
            compare(name, outputs["this tree"], outputs[args.rev], args.rev)


if __name__ == "__main__":
    main()
