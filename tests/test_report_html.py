"""A debate shared as one HTML file: the viewer's debate page whole, self-contained, escaped, from the page and from
``debate report --html``.

The debates are real (the fake model, in this process): the three of ``viewer_debates`` and a roundtable whose
problem and one of whose turns (a briefing) carry a planted ``<script>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from debate_engine.app.reports.standing import WAITING
from debate_engine.app.viewer import create_app, pages
from debate_engine.app.viewer.reading import Loaded
from debate_engine.app.viewer.sharing import file_name, shared_page
from debate_engine.app.viewer.templating import environment
from tests.support.debate_cli import in_process
from tests.support.viewer_debates import SCRIPT, run, three_debates
from tests.test_viewer_glance import BRIEFED, briefed_roundtable, text_of

ADDRESS = re.compile(r'\b(?:src|href|action|poster|data)\s*=\s*"([^"]*)"', re.IGNORECASE)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("share") / "debates.sqlite"
    three_debates(path)
    return {"db": path, "briefed": briefed_roundtable(path)}


@pytest.fixture
def client(made: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(str(made["db"]))) as client:
        yield client


def self_contained(html: str) -> None:
    """Fail unless ``html`` needs nothing else: no script, no form, no address but ``data:``, its own policy."""
    assert "<script" not in html.lower() and "<form" not in html.lower()
    assert '<link rel="stylesheet"' not in html and "<style>" in html
    assert all(a.startswith("data:") for a in ADDRESS.findall(html)), ADDRESS.findall(html)
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert policy and unescape(policy[1]).startswith("default-src 'none';")


def without_time(html: str) -> str:
    return re.sub(r"exported \d{4}-\d\d-\d\d \d\d:\d\d", "exported", html)


def test_the_debate_page_offers_its_file_to_download(client: TestClient) -> None:
    page = client.get("/debates/phases-1").text
    assert '<a class="share" href="/debates/phases-1/export.html" download>' in page
    shared = client.get("/debates/phases-1/export.html")
    assert shared.status_code == 200 and shared.headers["content-type"].startswith("text/html")
    assert shared.headers["content-disposition"].startswith(
        'attachment; filename="debate-phases-1.html"'
    )
    self_contained(shared.text)
    assert client.get("/debates/nobody/export.html").status_code == 404


def test_the_file_is_the_debate_page_whole_with_its_chart_inline(
    client: TestClient, made: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        pages.view, "TURNS_PER_PAGE", 2
    )  # the page shows 2 turns; the file all of them
    page = text_of(client.get(f"/debates/{BRIEFED}").text)
    shared = client.get(f"/debates/{BRIEFED}/export.html").text
    self_contained(shared)
    text = text_of(shared)
    for part in ("Verdict", "why it stopped", "Dissent and cruxes", "Turns", "Figures"):
        assert part in page and part in text, part
    assert (
        "Act" not in text
        and "Fork and run" not in text
        and "memory" not in text.split("Problem")[0]
    )
    said = [t for t in made["briefed"]["transcript"] if t["kind"] != "synthesis"]
    assert len(re.findall(r'<details class="turn ', shared)) >= len(said) > 2
    for turn in said:
        assert str(escape(turn["content"])) in shared, turn["seq"]
    assert "turn 4: security" in text and "The SLA is 99.9%." in text
    chart = re.search(
        r'<img class="chart" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', shared
    )
    assert chart, "the positions chart is put inline"


def test_a_planted_script_in_the_problem_and_in_a_turn_is_text(client: TestClient) -> None:
    shared = client.get(f"/debates/{BRIEFED}/export.html").text
    assert SCRIPT not in shared and "<img src=x" not in shared
    planted = str(escape(SCRIPT))
    assert shared.count(planted) >= 2  # the problem, and the briefing (a turn of the transcript)
    assert f"Pick a queue {SCRIPT}" in text_of(shared)


def test_debate_report_html_writes_the_same_file(
    client: TestClient, made: dict[str, Any], tmp_path: Path
) -> None:
    target = tmp_path / "shared.html"
    done = in_process("report", BRIEFED, "--db", str(made["db"]), "--html", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # the page goes to its file; the Markdown only where --output says
    served = client.get(f"/debates/{BRIEFED}/export.html").text
    assert without_time(target.read_text(encoding="utf-8")) == without_time(served)
    both = in_process(
        "report",
        "--thread",
        "phases-1",
        "--db",
        str(made["db"]),
        "--html",
        str(tmp_path / "p.html"),
        "--output",
        str(tmp_path / "p.md"),
    )
    assert both.returncode == 0, both.stderr
    assert (tmp_path / "p.md").read_text().startswith("# Debate report")
    self_contained((tmp_path / "p.html").read_text())


def test_debate_report_html_reads_a_runs_json_too(tmp_path: Path) -> None:
    out, db = tmp_path / "run.json", tmp_path / "d.sqlite"
    run(
        db,
        "run",
        "--model",
        "fake:solve=0",
        "--rounds",
        "2",
        "--output",
        str(out),
        "What is 12+34?",
    )
    target = tmp_path / "from-json.html"
    done = in_process("report", str(out), "--html", str(target))
    assert done.returncode == 0, done.stderr
    html = target.read_text(encoding="utf-8")
    self_contained(html)
    text = text_of(html)
    values = json.loads(out.read_text())
    assert "run.json" in text and "answer 47" in text and "done" in text
    assert len(re.findall(r'<tr id="round-\d">', html)) == 2
    debated = [t for t in values["transcript"] if t["kind"] != "synthesis"]
    assert len(debated) == 3 + 2 * (6 + 3) and all(
        str(escape(t["content"])) in html for t in debated
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("report", "nobody"), "no debate 'nobody' in "),
        (("report", "phases-1", "--thread", "phases-1"), "name one debate"),
        (("report", "phases-1", "--html", "{tmp}/no/such/folder/x.html"), "--html "),
        (("report", "phases-1", "--html", "{tmp}"), "is a directory; give a file name such as "),
    ],
)
def test_debate_report_html_refuses_what_it_cannot_do_with_exit_2(
    made: dict[str, Any], tmp_path: Path, argv: tuple[str, ...], said: str
) -> None:
    given = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if "--html" not in given:
        given += ["--html", str(tmp_path / "x.html")]
    done = in_process(*given, "--db", str(made["db"]))
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.html").exists() and done.stdout == ""
    if said == "--html ":
        assert "does not exist; create it first" in done.stderr
    if "directory" in said:
        assert "debate.html" in done.stderr


def test_a_waiting_debates_file_says_what_it_waits_on_and_offers_no_form(
    made: dict[str, Any],
) -> None:
    question = {"type": "human_turn", "seat": "alice", "task": f"Speak {SCRIPT}", "kind": "message"}
    loaded = Loaded("v1", made["briefed"], [])
    now = {"checkpoint": "v1", "status": WAITING, "phase": "turn", "round": 4, "failed": None}
    now |= {"where": "round 4/4, after turn", "turns": 4}
    asks = {
        "questions": [{"agent_id": "kiss", "questions": ["Which region?", "What load?"]}],
    }
    context = {"thread": "waits", "now": now, "tree": None}
    context["questions"] = [("q1", question), ("q2", asks)]
    context |= {"settings": {}, **pages.live_part(loaded, 1, now, whole=True)}
    html = shared_page(environment(), loaded, context)
    self_contained(html)
    assert "the debate waited on 2 questions: answer in debate serve or the terminal" in text_of(
        html
    )
    assert f"alice, a message: Speak {SCRIPT}" in text_of(html)  # each question, escaped
    assert SCRIPT not in html and "<form" not in html
    assert "kiss asks: Which region?" in text_of(html) and "kiss asks: What load?" in text_of(html)


@pytest.mark.parametrize(
    ("thread", "name"),
    [
        ("phases-1", "debate-phases-1.html"),
        ("compare:abc:vote-3:arithmetic-1:1", "debate-compare-abc-vote-3-arithmetic-1-1.html"),
        ("débat@équipe", "debate-d-bat-quipe.html"),
        ("..", "debate-debate.html"),
    ],
)
def test_the_files_name_is_the_thread_id_in_plain_letters(thread: str, name: str) -> None:
    assert file_name(thread) == name
