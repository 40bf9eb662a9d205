"""Who may use the viewer and what a page may do: the access token, the form token, the security headers.

On loopback anyone on the machine may read (as ``debate list`` may); on any
other address every request needs the access token, given once in the URL
and kept in a cookie. Every state-changing request carries the form token the
server put in its own pages: another site cannot read it, so it cannot start,
answer, resume or fork a debate. The content security policy lets only the
viewer's own script and style run: a model's text can never become code.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

LOG = logging.getLogger("debate.viewer")
COOKIE = "debate_viewer"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
    "img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def is_loopback(host: str) -> bool:
    """Return True for an address only this machine reaches."""
    return host in LOOPBACK or host.startswith("127.")


def new_token() -> str:
    """Return a fresh random token."""
    return secrets.token_urlsafe(18)


def same(given: str | None, expected: str) -> bool:
    """Compare two tokens in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class Guard(BaseHTTPMiddleware):
    """Ask for the access token when one is set, and add the security headers to every response."""

    def __init__(self, app: ASGIApp, access: str | None) -> None:
        super().__init__(app)
        self.access = access

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        """Refuse a request without the access token; take it from the URL once and keep it in a cookie."""
        if self.access:
            given = request.query_params.get("token")
            if same(given, self.access):
                kept = RedirectResponse(request.url.remove_query_params("token"), 303)
                kept.set_cookie(COOKIE, self.access, httponly=True, samesite="strict")
                return kept
            if not same(request.cookies.get(COOKIE), self.access):
                return _headers(
                    PlainTextResponse(
                        "this viewer needs its access token: open the URL `debate serve` printed",
                        403,
                    )
                )
        return _headers(await call_next(request))


def _headers(response: Response) -> Response:
    response.headers.update(HEADERS)
    return response
