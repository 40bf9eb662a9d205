"""What a page may change: start a debate, answer its questions, stop it, resume it, fork it.

Each action needs the form token of the server's own pages (``guard``), is
refused while another process runs the thread, and redirects to the debate's
page, where the run shows itself as it goes. A form with a mistake comes back
with the field named and what was typed kept. An answer is taken while the
run is still busy with its phase: it is kept and delivered when the run
reaches its question (``running``).
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from debate_engine.app.store.forking import (
    Changes,
    fork_point,
    fork_settings,
    fork_values,
    origin_of,
    write_fork,
)
from debate_engine.app.viewer import pages
from debate_engine.app.viewer.guard import same
from debate_engine.app.viewer.in_flight import showing_steps
from debate_engine.app.viewer.pages import loaded_or_404, standing
from debate_engine.app.viewer.running import pending_writes, waiting
from debate_engine.app.viewer.start_form import (
    FORM_OWN,
    FormErrors,
    chosen_protocol,
    field_errors,
    form_fields,
    parse_form,
    unusable_model,
)
from debate_engine.app.viewer.templating import render
from debate_engine.config.file import ConfigError
from debate_engine.config.settled import settle
from debate_engine.errors import InputError
from debate_engine.graph.by_protocol import graph_for, protocol_of
from debate_engine.nodes.human import HUMAN_TURN, WrongShape, read_answer
from debate_engine.nodes.positions import POSITION_KINDS
from debate_engine.providers.secrets import redact

MAX_FORM_BYTES = 1_000_000
"""A form larger than this is refused: an answer or a problem is text, not a file."""


async def checked_form(request: Request) -> dict[str, str]:
    """Return the posted form; a 403 page when it lacks this server's form token (another site sent it).

    Forms are sent URL-encoded (the pages upload no file), so they are read here without a multipart parser.
    The guard has checked the sender and the access token before; the body is read only up to the limit.
    """
    body = await _limited_body(request)
    form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    given = form.get("csrf")
    if given is None or not same(given, request.app.state.csrf):
        raise HTTPException(
            403,
            "this form is not from this viewer's own page (its token is missing or old); "
            "reload the page and send it again",
        )
    return form


async def _limited_body(request: Request) -> bytes:
    """Return the request's body; a 413 page as soon as it says or proves to be over the limit."""
    too_large = HTTPException(413, "this form is too large; send at most 1 MB of text")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise too_large
    return bytes(body)


def to_page(request: Request, thread: str) -> Response:
    """Return the redirect to a debate's page, its id quoted whole.

    ``url_for`` puts a path parameter in as it is, and the redirect's own quoting keeps ``?``, ``#`` and
    ``%``: a debate made through LangGraph's API under such an id would land on another address.
    """
    return RedirectResponse(request.url_for("debate", thread=quote(thread, safe="")), 303)


async def start(request: Request) -> Response:
    """Start a debate from the form; a mistake shows the form again, the field named, what was typed kept.

    ``show`` (the protocol's button) shows the form again with the chosen protocol's settings, starting
    nothing: a page without script changes protocol so. Every setting and the models are checked before
    a thread exists, so a form that cannot run leaves no debate behind.
    """
    form = await checked_form(request)
    typed = {k: v for k, v in form.items() if k not in ("csrf", "show")}
    if form.get("show"):
        return _form_again(request, _kept_for(typed), {}, 200)
    try:
        problem, context = parse_form(typed)
        # every setting checked as `debate run` checks it, resolved once: it reads files, so in a thread
        settled = await asyncio.to_thread(settle, context)
    except FormErrors as exc:
        return _form_again(request, typed, exc.errors)
    except ConfigError as exc:
        return _form_again(request, typed, field_errors(exc.lines()))
    except InputError as exc:  # a missing API key
        return _form_again(request, typed, {"model": exc.message()})
    if unusable := await asyncio.to_thread(unusable_model, settled.settings):
        return _form_again(request, typed, {"model": unusable})
    thread = typed.get("thread_id", "").strip() or new_thread()
    if (await request.app.state.store.newest(thread))[0] is not None:
        return _form_again(request, typed, {"thread_id": f"thread {thread} already holds a debate"})
    request.app.state.runs.start(thread, settled.intake(redact(problem)), context, None)
    await first_checkpoint(request, thread)
    failed = request.app.state.runs.failed.get(thread)
    if failed and (await request.app.state.store.newest(thread))[0] is None:
        return _form_again(request, typed, {"": f"the debate could not start: {failed}"})
    return to_page(request, thread)


FIRST_CHECKPOINT_S = 10.0
"""How long a new debate may take to write its first checkpoint before its page is shown anyway."""


async def first_checkpoint(request: Request, thread: str) -> None:
    """Wait until a new run has written its first checkpoint (or ended), so its page has a debate to show."""
    store, runs = request.app.state.store, request.app.state.runs
    waited = 0.0
    while waited < FIRST_CHECKPOINT_S and runs.running(thread):
        if (await store.newest(thread))[0] is not None:
            return
        await asyncio.sleep(0.05)
        waited += 0.05
    # a run that ended has its failure recorded (a done callback) before the caller looks
    await asyncio.sleep(0)


def new_thread() -> str:
    """Return a new thread id, named as ``debate run`` names one."""
    return f"debate-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def _form_again(
    request: Request, typed: dict[str, str], errors: dict[str, str], code: int = 400
) -> Response:
    return render(request, "new.html", code, fields=form_fields(), form=typed, errors=errors)


def _kept_for(typed: dict[str, str]) -> dict[str, str]:
    """Return what was typed that the chosen protocol's form still has: another protocol's settings go."""
    shown = {f.name for f in form_fields(chosen_protocol(typed))} | FORM_OWN
    return {k: v for k, v in typed.items() if k in shown}


async def _ready(request: Request, thread: str) -> dict[str, Any]:
    """Return where the debate stands; refuse while it runs (here or in another process)."""
    now = await standing(request, thread)
    if now["status"] == "running" or request.app.state.runs.running(thread):
        raise HTTPException(409, f"debate {thread} is running; wait for it to stop or finish")
    return now


ELSEWHERE = (
    "Nothing was recorded: another process runs this debate and asks its questions itself "
    "(a terminal's `debate run --human` or `debate resume`); answer there."
)
STALE = (
    "Nothing was recorded: the form you sent answers questions that no longer wait for an answer "
    "(answered or passed already, from this page, another tab or a terminal). The questions "
    "waiting now are below; what you sent is kept under them."
)
EMPTY = "Nothing was sent: write an answer, or tick pass to pass your turn."
WRONG = "Nothing was sent: an answer has a mistake, named under it; what you typed is kept."


async def answer(request: Request) -> Response:
    """Keep the answers a form gives to questions still waiting, and see them delivered.

    Each field names the question it answers (its interrupt id): a form answers only those, and one
    naming no question that still waits (the back button, a second tab, a second click) records
    nothing. The run may still be busy with the phase's other calls: the answer is kept in the
    database and delivered when the run reaches its question.
    """
    form = await checked_form(request)
    thread, loaded = await loaded_or_404(request)
    store, runs = request.app.state.store, request.app.state.runs
    if not runs.running(thread) and await store.busy(thread):
        return await _page_again(request, 409, ELSEWHERE, form, unsent=True)
    kept = await runs.kept(thread)
    open_now = {
        key: item.value
        for key, item in waiting(await pending_writes(store.saver, thread)).items()
        if key not in kept
    }
    chosen = {key: open_now[key] for key in named(form) if key in open_now}
    if not chosen:
        return await _page_again(request, 409, STALE, form, unsent=True)
    answers, errors = read_answers(chosen, form)
    if errors or not answers:
        return await _page_again(request, 400, WRONG if errors else EMPTY, form, errors)
    if not await runs.receive(thread, answers, protocol_of(loaded.values)):
        return await _page_again(request, 409, STALE, form, unsent=True)  # another tab was first
    return to_page(request, thread)


async def _page_again(
    request: Request,
    code: int,
    notice: str,
    form: dict[str, str],
    errors: dict[str, str] | None = None,
    unsent: bool = False,
) -> Response:
    """Return the debate's page as it stands now, saying why nothing was recorded, with what was typed kept.

    The template reads ``request.state.answering``: the notice, each question's mistake, the fields as
    typed (put back in the fields of questions still open), and, for a stale form, the words sent.
    """
    typed = {k: v for k, v in form.items() if k != "csrf"}
    request.state.answering = {
        "notice": notice,
        "errors": errors or {},
        "typed": typed,
        "unsent": [v.strip() for k, v in typed.items() if v.strip() and _words(k)]
        if unsent
        else [],
    }
    page = await showing_steps(pages.debate)(request)
    return HTMLResponse(bytes(page.body), status_code=code)


FIELD = re.compile(r"^(answer|pass|position|reason|confidence|short)-([0-9a-f]+)(?:-|$)")
"""An answer form's field: its kind, then the id of the question it answers (and, for the agents'
clarifying questions, the agent and the question's number)."""
STATED = ("position", "reason", "confidence")
"""The fields of a position named as the answer names them; its short answer is ``short-`` (``answer-`` is the text)."""


def named(form: dict[str, str]) -> list[str]:
    """Return the questions a form names, in its order: every field carries its question's id."""
    return list(dict.fromkeys(m[2] for key in form if (m := FIELD.match(key))))


def _words(field: str) -> bool:
    """Return whether a form field holds a person's words (not a box ticked or a confidence)."""
    found = FIELD.match(field)
    return found is not None and found[1] in ("answer", "position", "reason", "short")


def read_answers(
    chosen: dict[str, Any], form: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return each answer the form gives (a question it leaves blank is left waiting) and each mistake, by id."""
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, question in chosen.items():
        if not (isinstance(question, dict) and question.get("type") == HUMAN_TURN):
            answers[key] = _clarifications(key, question, form)
            continue
        try:
            given = _turn(key, str(question.get("kind", "")), form)
        except WrongShape as exc:
            errors[key] = str(exc)
            continue
        if given is not None:
            answers[key] = given
    return answers, errors


def _turn(key: str, kind: str, form: dict[str, str]) -> Any:
    """Return a person's answer from its fields: the text, or the text with the position it states.

    None when every field is blank: passing is the pass box, never a missing or empty field.
    """
    text = form.get(f"answer-{key}", "").strip()
    fields = {name: form.get(f"{name}-{key}", "").strip() for name in STATED}
    fields["answer"] = form.get(f"short-{key}", "").strip()
    stated: dict[str, Any] = {name: value for name, value in fields.items() if value}
    if form.get(f"pass-{key}"):
        if text or stated:
            raise WrongShape(
                "you ticked pass and wrote an answer: untick pass to send it, or clear it to pass"
            )
        return ""
    if not stated:
        return text or None
    if kind not in POSITION_KINDS:
        raise WrongShape(f"a {kind} states no position; write it in the text")
    if "position" not in stated:
        raise WrongShape("write the position itself: a reason, confidence or answer goes with one")
    if "confidence" in stated:
        stated["confidence"] = _confidence(stated["confidence"])
    value = {"text": text, **stated} if text else stated
    read_answer(value, kind)  # the debate's own check, so that the run takes what was kept
    return value


def _confidence(typed: str) -> int:
    """Return a confidence typed as a whole number from 0 to 100 (a % sign allowed)."""
    number = typed.removesuffix("%").strip()
    if not number.isdigit() or int(number) > 100:
        raise WrongShape(f"confidence {typed[:20]!r} is not a whole number from 0 to 100")
    return int(number)


def _clarifications(key: str, question: Any, form: dict[str, str]) -> dict[str, list[str]]:
    """Return the answers to the agents' clarifying questions, each agent's in order (a blank one is no answer)."""
    return {
        entry["agent_id"]: [
            str(form.get(f"answer-{key}-{entry['agent_id']}-{n}", "")).strip()
            for n in range(len(entry["questions"]))
        ]
        for entry in (question or {}).get("questions", [])
    }


async def resume(request: Request) -> Response:
    """Resume a stopped debate from its last checkpoint, with the settings it started with."""
    await checked_form(request)
    thread, loaded = await loaded_or_404(request)
    now = await _ready(request, thread)
    if now["status"] == "done":
        raise HTTPException(409, f"debate {thread} is already finished")
    request.app.state.runs.start(thread, None, None, protocol_of(loaded.values))
    return to_page(request, thread)


async def stop(request: Request) -> Response:
    """Stop this server's run of a debate; its finished calls stay in the checkpoint and it resumes from the page."""
    await checked_form(request)
    thread, _ = await loaded_or_404(request)
    if not await request.app.state.runs.stop(thread):
        if await request.app.state.store.busy(thread):
            raise HTTPException(
                409,
                f"debate {thread} runs in another process (a terminal's `debate run` or `debate "
                "resume`, or a worker): stop it there, with Ctrl-C",
            )
        raise HTTPException(409, f"debate {thread} is not running; there is nothing to stop")
    return to_page(request, thread)


async def fork(request: Request) -> Response:
    """Fork the debate at the end of a round with changed settings, and run the fork."""
    form = await checked_form(request)
    thread, _ = await loaded_or_404(request)
    store = request.app.state.store
    text = {k: form.get(k, "").strip() for k in ("round", "model", "agents", "rounds")}
    if not text["round"].isdigit() or not (text["rounds"] == "" or text["rounds"].isdigit()):
        raise HTTPException(400, "round and rounds are whole numbers; go back and fix them")
    at = int(text["round"])
    changes = Changes(
        agents=text["agents"] or None,
        model=text["model"] or None,
        rounds=int(text["rounds"]) if text["rounds"] else None,
    )
    point = await fork_point(store.saver, store.graph, thread, at, store.db)
    origin = origin_of(point, thread, at)
    values = fork_values(point, *fork_settings(point.values, changes, at), origin)
    new = f"{thread}-fork-r{at}-{uuid.uuid4().hex[:6]}"
    await write_fork(graph_for(protocol_of(point.values), store.saver), point, values, new)
    request.app.state.runs.start(new, None, None, protocol_of(point.values))
    return to_page(request, new)
