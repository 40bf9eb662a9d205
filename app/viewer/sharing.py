"""A debate as one HTML file that needs nothing else: the viewer's debate page whole, to send to someone.

The file is the debate page itself (``debate.html``) rendered ``standalone``: every round and
turn on one page, the style sheet inline, the charts as ``data:`` images, and no form, no script
and no link into a server. Its own Content-Security-Policy forbids scripts and every fetch as
well, so a text that slipped its escaping could neither run nor call out. ``debate serve`` offers
it at ``/debates/{id}/export.html``; ``debate report --html FILE`` writes the same file from the
database or from a run's ``--output`` JSON.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from html import unescape
from typing import Any
from urllib.parse import quote

from jinja2 import Environment
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from debate_engine.app.reports.standing import DONE, INTERRUPTED, where
from debate_engine.app.viewer.pages import (
    debate_context,
    live_part,
    loaded_or_404,
    positions_image,
    standing,
    standing_of,
)
from debate_engine.app.viewer.reading import Loaded, Store
from debate_engine.app.viewer.templating import HERE, environment, page
from debate_engine.providers.secrets import redact

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The file's own policy: its inline style and ``data:`` images, nothing else, wherever it is opened."""
CHARTS: dict[str, Callable[[Loaded], str | None]] = {"positions.svg": positions_image}
"""The debate's own images the page shows, by their address's last part, made as their routes make them:
put inline. An image of a route missing here stays an address, which the file's policy never fetches."""
SOURCE = re.compile(r'src="([^"]*)"')


def file_name(thread: str) -> str:
    """Return the file's name: the thread id with anything but ASCII letters, digits, ``.``, ``_`` and ``-`` made
    ``-``, a name every system and every header can carry."""
    return f"debate-{re.sub(r'[^A-Za-z0-9._-]+', '-', thread).strip('-.')[:80] or 'debate'}.html"


def shared_page(env: Environment, loaded: Loaded, context: dict[str, Any], root: str = "") -> str:
    """Return the debate page of ``context`` as one self-contained file, its images inline, redacted."""
    text = page(
        env,
        "debate.html",
        standalone=True,
        csp=CSP,
        style=Markup((HERE / "static" / "viewer.css").read_text(encoding="utf-8")),  # our own file
        exported=time.strftime("%Y-%m-%d %H:%M"),
        root=root,
        db="",
        csrf="",
        **context,
    )
    return inline_images(text, f"{root}/debates/{quote(context['thread'], safe='')}/", loaded)


def inline_images(text: str, base: str, loaded: Loaded) -> str:
    """Put the debate's own images (``base`` + a name in ``CHARTS``) into the page as ``data:`` addresses.

    Any other address is left as it is: the file's policy keeps it from being fetched.
    """

    def inline(found: re.Match[str]) -> str:
        address = unescape(found[1])
        name = address.removeprefix(base).split("?", 1)[0]
        made = CHARTS[name](loaded) if address.startswith(base) and name in CHARTS else None
        if made is None:
            return found[0]
        encoded = base64.b64encode(redact(made).encode("utf-8")).decode("ascii")
        return f'src="data:image/svg+xml;base64,{encoded}"'

    return SOURCE.sub(inline, text)


async def export(request: Request) -> Response:
    """Return a debate as one self-contained HTML file to download and share."""
    thread, loaded = await loaded_or_404(request)
    now = await standing(request, thread)
    context = await debate_context(request.app.state.store, thread, loaded, now, 1, whole=True)
    text = shared_page(request.app.state.env, loaded, context, request.scope.get("root_path", ""))
    disposition = f'attachment; filename="{file_name(thread)}"'
    return Response(
        text, media_type="text/html; charset=utf-8", headers={"Content-Disposition": disposition}
    )


async def thread_file(db: str, thread: str) -> str | None:
    """Return a debate stored in ``db`` as one self-contained HTML file; None when ``db`` holds no such debate."""
    store = Store(db)
    await store.open()
    try:
        loaded = await store.load(thread)
        if loaded is None:
            return None
        now = await standing_of(store, thread)
        context = await debate_context(store, thread, loaded, now, 1, whole=True)
    finally:
        await store.close()
    return shared_page(environment(), loaded, context)


def values_file(values: dict[str, Any], name: str) -> str:
    """Return a debate read from a run's ``--output`` JSON as one self-contained HTML file, named ``name``.

    The JSON holds the debate's values only: it is done, or else stopped (``interrupted``), with no
    pending question and no fork family.
    """
    status = values.get("status") or {}
    phase = status.get("phase", "setup")
    now = {
        "checkpoint": "",
        "status": DONE if phase == DONE else INTERRUPTED,
        "phase": phase,
        "round": status.get("round", 0),
        "where": where(values.get("status")),
        "turns": status.get("turns", 0),
        "failed": None,
    }
    loaded = Loaded("", values, [])
    context = {
        "thread": name,
        "now": now,
        "questions": [],
        "tree": None,
        "settings": values.get("settings") or {},
        **live_part(loaded, 1, now, whole=True),
    }
    return shared_page(environment(), loaded, context)
