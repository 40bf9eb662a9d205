"""The viewer at ``/ui`` of ``langgraph dev``: ``langgraph.json``'s ``http.app``, over the server's own threads.

The server loads this file by its path before it serves anything, so it
imports Starlette alone; the viewer is imported and started in the server's
lifespan. If that fails, ``/ui`` says so in a line and the graphs are served
all the same: a broken viewer never stops ``langgraph dev``. The pages only
read: Studio and the SDK start, answer, resume and fork runs. They answer only
to loopback names (``guard``), at any port: ``langgraph dev`` tells its graphs
its URL (``LANGGRAPH_API_URL``), but a browser may reach the server through
another port (``langgraph up`` maps one to the container's), and a rebinding
page is refused by its name whatever its port. The server's
own generative-UI routes, also at ``/ui``, are switched off in ``langgraph.json``
(``disable_ui``): the debates send no UI components.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

LOG = logging.getLogger("debate.viewer")
PREFIX = "/ui"
LABEL = "langgraph dev · read-only: start, answer, resume and fork a debate in Studio or the SDK"
"""What the pages' header says in place of a database: where the threads are and why there are no forms."""
ANY_LOOPBACK_PORT = ("localhost", None)
"""The names the pages answer to: loopback ones, at whatever port the server in front is reached."""


class Viewer:
    """What ``/ui`` serves: the viewer once it started, a one-line message before that or if it failed."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None
        self.problem = "the viewer is starting"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the viewer, or say why there is none."""
        if self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            text = f"{self.problem}; the graphs are served as usual"
            await PlainTextResponse(text, 503)(scope, receive, send)


def read_only_viewer() -> Starlette:
    """Return the viewer's read-only pages over the server's threads."""
    from debate_engine.app.viewer.running import Runs  # start-up: see the module's docstring
    from debate_engine.app.viewer.server_reading import (  # start-up: see the module's docstring
        ServerStore,
    )
    from debate_engine.app.viewer.site import viewer_app  # start-up: see the module's docstring

    return viewer_app(ServerStore(), Runs(""), LABEL, act=False, address=ANY_LOOPBACK_PORT)


VIEWER = Viewer()


async def to_the_list(request: Request) -> RedirectResponse:
    """Send ``/ui`` to ``/ui/``: the server's own routes would answer it with a 404 otherwise."""
    return RedirectResponse(request.url.replace(path=request.url.path + "/"), 307)


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Start the viewer with the server; on failure log one line and serve the graphs regardless."""
    async with AsyncExitStack() as stack:
        try:
            viewer = read_only_viewer()
            await stack.enter_async_context(viewer.router.lifespan_context(viewer))
            VIEWER.app = viewer
        except Exception as exc:  # anything: the graphs are served all the same
            LOG.error("the viewer at %s is off: %s: %s", PREFIX, type(exc).__name__, exc)
            VIEWER.problem = f"the viewer could not start ({type(exc).__name__}: {exc})"
        yield


app = Starlette(routes=[Route(PREFIX, to_the_list), Mount(PREFIX, app=VIEWER)], lifespan=lifespan)
