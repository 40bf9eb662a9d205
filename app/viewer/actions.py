"""What a page may change: start a debate, answer its questions, resume it, fork it.

Each action needs the form token of the server's own pages (``guard``), is
refused while another process runs the thread, and redirects to the debate's
page, where the run shows itself as it goes. A form with a mistake comes back
with the field named and what was typed kept.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from debate_engine.app.cli.person import as_answer, is_person_question
from debate_engine.app.cli.run import checked_context
from debate_engine.app.cli.runner import graph_for, protocol_of
from debate_engine.app.store.forking import (
    Changes,
    fork_point,
    fork_settings,
    fork_values,
    origin_of,
    write_fork,
)
from debate_engine.app.viewer.guard import same
from debate_engine.app.viewer.pages import loaded_or_404, standing
from debate_engine.app.viewer.start_form import FormErrors, field_errors, form_fields, parse_form
from debate_engine.app.viewer.templating import render
from debate_engine.config.context import context_dict
from debate_engine.config.file import ConfigError
from debate_engine.errors import InputError
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
    """Return the redirect to a debate's page."""
    return RedirectResponse(request.url_for("debate", thread=thread), 303)


async def start(request: Request) -> Response:
    """Start a debate from the form; a mistake shows the form again, the field named, what was typed kept."""
    form = await checked_form(request)
    typed = {k: v for k, v in form.items() if k != "csrf"}
    try:
        problem, context = parse_form(typed)
        checked_context(
            context
        )  # every setting checked as `debate run` checks it, before anything runs
    except FormErrors as exc:
        return _form_again(request, typed, exc.errors)
    except ConfigError as exc:
        return _form_again(request, typed, field_errors(exc.lines()))
    except InputError as exc:  # a missing API key
        return _form_again(request, typed, {"model": exc.message()})
    thread = typed.get("thread_id", "").strip() or new_thread()
    if (await request.app.state.store.newest(thread))[0] is not None:
        return _form_again(request, typed, {"thread_id": f"thread {thread} already holds a debate"})
    payload = {"problem": redact(problem), "context": context_dict(context)}
    request.app.state.runs.start(thread, payload, context, None)
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


def _form_again(request: Request, typed: dict[str, str], errors: dict[str, str]) -> Response:
    return render(request, "new.html", 400, fields=form_fields(), form=typed, errors=errors)


async def _ready(request: Request, thread: str) -> dict[str, Any]:
    """Return where the debate stands; refuse while it runs (here or in another process)."""
    now = await standing(request, thread)
    if now["status"] == "running":
        raise HTTPException(409, f"debate {thread} is running; wait for it to stop or finish")
    return now


async def answer(request: Request) -> Response:
    """Answer the debate's pending questions (a person's turn, the agents' clarifying questions) and go on."""
    form = await checked_form(request)
    thread, loaded = await loaded_or_404(request)
    await _ready(request, thread)
    answers = {i.id: _answer_of(i.id, i.value, form) for i in loaded.interrupts}
    if not answers:
        raise HTTPException(409, f"debate {thread} has no question waiting for an answer")
    request.app.state.runs.answer(thread, answers, protocol_of(loaded.values))
    return to_page(request, thread)


def _answer_of(key: str, question: Any, form: dict[str, str]) -> Any:
    """Return one question's answer from the form: a person's text (or JSON position), or each agent's answers."""
    if is_person_question(question):
        return as_answer(str(form.get(f"answer-{key}", "")))
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
