"""The viewer's web app: routes, templates, the store it reads, the runs it drives, and its error pages.

``create_app(db)`` is what ``debate serve`` serves; ``viewer_app`` makes the
same pages over any reader with ``Store``'s interface, which is how
``langgraph dev`` shows its own threads at ``/ui`` (``mounted.py``), read-only.
Every template escapes what it is given (Jinja2 autoescape);
an unknown page or thread gets a 404 page that links to the list, and any other
failure a message, never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from debate_engine.app.viewer import actions, pages, sharing
from debate_engine.app.viewer.guard import Address, Guard, new_token
from debate_engine.app.viewer.in_flight import showing_steps
from debate_engine.app.viewer.reading import Reader, Store
from debate_engine.app.viewer.running import Runs
from debate_engine.app.viewer.templating import HERE, environment, render
from debate_engine.errors import DebateError
from debate_engine.providers.secrets import redact

LOG = logging.getLogger("debate.viewer")


async def not_found(request: Request, exc: Exception) -> Response:
    """Return the 404 page (or another HTTP error's page), which links back to the list."""
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    detail = exc.detail if isinstance(exc, HTTPException) else "not found"
    return render(request, "error.html", status, status=status, message=detail)


class Failures(BaseHTTPMiddleware):
    """Turn any failure into a page with a message; the traceback stays out of the page and the terminal."""

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        """Return the page, or the error page when making it failed."""
        try:
            return await call_next(request)
        except DebateError as exc:
            return render(request, "error.html", 400, status=400, message=exc.message())
        except Exception as exc:  # a bug or a database failure: a message, logged on one line
            LOG.error(
                "%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc
            )
            message = f"this page failed ({type(exc).__name__}); the debate itself is unchanged"
            return render(request, "error.html", 500, status=500, message=message)


def create_app(db: str, access: str | None = None, address: Address | None = None) -> Starlette:
    """Return the viewer over the debate database ``db``; ``access`` is the token every request then needs.

    ``address`` is where the server listens (``guard``): the names a request may give in its ``Host``.
    """
    return viewer_app(Store(db), Runs(db), redact(db), access, address=address)


READ_ONLY = (
    "this viewer only reads: start, answer, resume and fork a debate through Studio or the SDK"
)


async def read_only(request: Request) -> Response:
    """Say that this viewer changes nothing, and where to act instead."""
    return render(request, "error.html", 403, status=403, message=READ_ONLY)


def viewer_app(
    store: Reader,
    runs: Runs,
    label: str,
    access: str | None = None,
    act: bool = True,
    address: Address | None = None,
) -> Starlette:
    """Return the viewer over ``store``; without ``act``, the forms that start or steer a debate are refused."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await app.state.store.open()
        for template in app.state.env.list_templates():  # compiled now, not on a user's first page
            app.state.env.get_template(template)
        try:
            yield
        finally:
            await app.state.runs.stop_all()
            await app.state.store.close()

    app = Starlette(
        routes=[
            Route("/", pages.debates),
            Route("/new", pages.new_debate if act else read_only),
            Route("/new", actions.start if act else read_only, methods=["POST"]),
            Route("/debates/{thread}", showing_steps(pages.debate)),
            Route("/debates/{thread}/live", showing_steps(pages.live)),
            Route("/debates/{thread}/state", pages.state),
            Route("/debates/{thread}/positions.svg", pages.positions_chart),
            Route("/debates/{thread}/memory", pages.memory),
            Route("/debates/{thread}/export.html", sharing.export),
            Route("/debates/{thread}/turns/{seq:int}", pages.turn),
            Route(
                "/debates/{thread}/answer", actions.answer if act else read_only, methods=["POST"]
            ),
            Route(
                "/debates/{thread}/resume", actions.resume if act else read_only, methods=["POST"]
            ),
            Route("/debates/{thread}/fork", actions.fork if act else read_only, methods=["POST"]),
            Route("/debates/{thread}/stop", actions.stop if act else read_only, methods=["POST"]),
            Route("/comparisons/{name}", pages.comparison),
            Route("/comparisons/{name}/accuracy.svg", pages.accuracy_chart),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[Middleware(Guard, access=access, address=address), Middleware(Failures)],
        exception_handlers={404: not_found, 405: not_found, HTTPException: not_found},
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.runs = runs
    app.state.env = environment()
    app.state.csrf = new_token()
    app.state.db_label = label
    return app
