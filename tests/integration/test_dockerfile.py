"""The LangGraph Dockerfile is generated from langgraph.json offline, serving the graphs it declares."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.debate_cli import cli_env

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_dockerfile_is_generated_offline_from_langgraph_json(tmp_path: Path) -> None:
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    cli_path = Path(sys.executable).parent / "langgraph"
    assert cli_path.exists(), "langgraph-cli is a dev dependency"
    env = cli_env(
        HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY=""
    )  # no network
    target = tmp_path / "Dockerfile"
    result = subprocess.run(
        [str(cli_path), "dockerfile", "-c", str(ROOT / "langgraph.json"), str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = target.read_text()
    assert text.startswith("FROM langchain/langgraph-api")
    served = json.loads(
        next(line for line in text.splitlines() if line.startswith("ENV LANGSERVE_GRAPHS="))
        .split("=", 1)[1]
        .strip("'")
    )
    folder = f"/deps/{ROOT.name}"
    assert f"ADD . {folder}" in text
    assert served == {name: folder + spec.removeprefix(".") for name, spec in graphs.items()}
