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
from debate_engine.app.store.thread_ids import RULE
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
    env.filters["number"] = lambda value: (
        f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
    )
    env.filters["when"] = lambda at: time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
    env.globals["version"] = __version__
    env.globals["thread_id_rule"] = RULE
    return env


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
    text = state.env.get_template(template).render(
        request=request,
        csrf=state.csrf,
        db=state.db_label,
        root=request.scope.get("root_path", ""),
        **context,
    )
    return HTMLResponse(redact(text), status_code=code)
