"""A config file seating a fast agent and a slow one: how the live-page tests make one reply land before another."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from debate_engine.config.context import Context
from debate_engine.config.settled import settle


def team_file(folder: Path, slow: str, quick: str = "fake:latency_ms=10") -> Path:
    """Write ``team.json`` in ``folder``: ``quick`` (kiss) and ``slow`` (architect) on the models given, a fake
    judge, one round; return its path."""
    path = folder / "team.json"
    agents = [
        {"id": "quick", "role": "kiss", "model": quick},
        {"id": "slow", "role": "architect", "model": slow},
    ]
    config = {"agents": agents, "judge": {"id": "judge", "model": "fake"}, "debate": {"rounds": 1}}
    path.write_text(json.dumps(config))
    return path


def run_team(client: Any, team: Path, thread: str = "t") -> Any:
    """Start a debate of ``team`` on the viewer behind ``client`` (a TestClient), as its start form does; return
    the viewer's runs."""
    context = Context(config_file=str(team))
    runs = client.app.state.runs
    client.portal.call(runs.start, thread, settle(context).intake("Pick a queue"), context, None)
    return runs
