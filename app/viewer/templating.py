"""The viewer's templates: one Jinja2 environment, every value escaped, every page redacted on its way out."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from debate_engine import __version__
from debate_engine.app.reports.words import counted
from debate_engine.app.store.thread_ids import RULE
from debate_engine.app.viewer.debate_view import turn_name
from debate_engine.providers.secrets import redact

HERE = Path(__file__).parent


def environment() -> Environment:
    """Return the templates, every value escaped unless a template marks it safe."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["q"] = lambda text: quote(str(text), safe="")
    env.filters["no_address"] = no_address
    env.filters["money"] = lambda value: f"${float(value or 0):.4f}"
    env.filters["number"] = number
    env.filters["counted"] = counted_number
    env.filters["turn_name"] = turn_name
    env.filters["when"] = lambda at: time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
    env.globals["version"] = __version__
    env.globals["thread_id_rule"] = RULE
    return env


def number(value: float) -> str:
    """Return a count or token figure as every page prints it: ``12,345``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def counted_number(value: int, noun: str, plural: str = "") -> str:
    """Return ``1 turn``, ``12,345 tokens``: a count with its noun, in the plural unless it is 1."""
    return f"{number(value or 0)} {counted(int(value or 0), noun, plural).partition(' ')[2]}"


UNROUTABLE = ("", ".", "..")
"""Ids a web address cannot name: a browser reads ``.`` and ``..``, escaped or not, as steps of the path."""


def no_address(thread: str) -> str:
    """Return why no page of the viewer can have a thread's address, or "" when its id quoted (``q``) is one.

    A route's part ends at ``/``, and a ``%2F`` is decoded to one before routing, so an id holding ``/``
    has no page. The command line and the start form refuse such ids (``store.thread_ids``); LangGraph's
    own API takes any string, so a list may still hold one: it is shown without a link, saying why.
    """
    if "/" not in thread and thread not in UNROUTABLE:
        return ""
    held = "holds a '/'" if "/" in thread else f"is {thread!r}"
    return (
        f"its thread id {held}, which no web address of this viewer can carry; "
        f"read it with `debate show {shlex.quote(thread)}`"
    )


def render(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """Return a page, its text redacted: a secret a model repeated never reaches the browser."""
    state = request.app.state
    text = page(
        state.env,
        template,
        request=request,
        csrf=state.csrf,
        db=state.db_label,
        root=request.scope.get("root_path", ""),
        **context,
    )
    return HTMLResponse(text, status_code=code)


def page(env: Environment, template: str, **context: Any) -> str:
    """Return a page's text, redacted: what ``render`` serves and a shared debate's file holds."""
    return redact(env.get_template(template).render({"standalone": False, **context}))
