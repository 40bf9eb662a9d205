"""Who may use the viewer and what a page may do: the names it answers to, the tokens, the security headers.

Another site's page must neither read the viewer nor act through it. The
browser's same-origin rule keeps its scripts out only while the viewer answers
to its own names: under a foreign name whose DNS points at 127.0.0.1 (DNS
rebinding) the attacker's page would be same-origin with it. So every request,
static files included, must name the viewer in its ``Host``: on loopback only
``127.0.0.1``, ``localhost`` or ``[::1]`` at the viewer's port, off loopback
the address it listens on (any name on a wildcard address, where the access
token guards every request). A request a browser sends on a page's behalf must
come from one of those origins (``Origin``; for a state-changing request
without it, ``Referer``), which also keeps other sites from reading the pages
through a server in front that allows every origin (``langgraph dev``'s CORS).
A state-changing request must carry the form token the server put in its own
pages; another site cannot read it, so it cannot start, answer, resume or fork
a debate. Off loopback every request needs the access token, given once in the
URL and kept in a cookie named after the port (browsers do not keep cookies
apart by port). The content security policy lets only the viewer's own script
and style run: a model's text can never become code.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

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
    # not no-referrer: under it a browser sends `Origin: null` with the viewer's own forms
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
LOOPBACK = ("127.0.0.1", "::1", "localhost")
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""The names a browser reaches a loopback viewer by, as a ``Host`` header spells them."""
WILDCARDS = ("0.0.0.0", "::", "")
"""Addresses that listen on every interface: any name of the machine reaches them."""
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")

Address = tuple[str, int | None]
"""Where the viewer listens: the host it was given and its port (None: any port, the server in front knows it)."""


def is_loopback(host: str) -> bool:
    """Return True for an address only this machine reaches."""
    return host in LOOPBACK or host.startswith("127.")


def new_token() -> str:
    """Return a fresh random token."""
    return secrets.token_urlsafe(18)


def same(given: str | None, expected: str) -> bool:
    """Compare two tokens in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def cookie_name(port: int | None) -> str:
    """Return the access cookie's name: with the port, so two viewers on one host keep their own."""
    return f"{COOKIE}_{port}" if port else COOKIE


def _as_name(host: str) -> str:
    """Return an address as a ``Host`` header names it (an IPv6 address in brackets), in lower case."""
    return f"[{host}]".lower() if ":" in host else host.lower()


def _split(netloc: str, default_port: int) -> tuple[str, int | None]:
    """Return a ``Host`` value's name and port (the scheme's when none is given; None when not a port)."""
    netloc = netloc.strip().lower()
    name, colon, port = netloc.rpartition(":")
    if not colon or netloc.endswith("]"):
        return netloc, default_port
    return name, int(port) if port.isascii() and port.isdigit() else None


def names_this_viewer(netloc: str, address: Address, default_port: int) -> bool:
    """Return True when ``netloc`` (a ``Host`` header, an origin's host) names the viewer at ``address``.

    On loopback any other name is another site's page reaching the viewer through its DNS; a
    wildcard address answers to every name of the machine, each request holding the access token.
    """
    host, port = address
    name, given_port = _split(netloc, default_port)
    if given_port is None or (port is not None and given_port != port):
        return False
    if is_loopback(host):
        return name in LOOPBACK_NAMES or name == _as_name(host)
    return host in WILDCARDS or name == _as_name(host)


def refusal(request: Request, address: Address) -> str | None:
    """Return why a request is refused (a foreign name, a foreign page's request), or None."""
    default_port = 443 if request.url.scheme == "https" else 80
    named = request.headers.get("host", "")
    if not names_this_viewer(named, address, default_port):
        host, port = address
        names = "127.0.0.1, localhost or [::1]" if is_loopback(host) else _as_name(host)
        at = f" at port {port}" if port else ""
        return (
            f"this viewer answers only to {names}{at}, not to the name {named!r}: a page under "
            "another name may be a foreign site reaching it through its DNS (DNS rebinding), so "
            "it is refused; open the URL `debate serve` printed"
        )
    # a browser names the page behind a script's request (`Origin`) and behind a form (`Origin`, or
    # `Referer` from an older browser); a link from another site is fine, so `Referer` counts only
    # when the request changes something. A client sending neither is no browser page: the form
    # token still guards it.
    sent = request.headers.get("origin")
    if sent is None and request.method not in SAFE_METHODS:
        sent = request.headers.get("referer")
    if sent is None:
        return None
    source = urlsplit(sent)
    if source.scheme == request.url.scheme and names_this_viewer(
        source.netloc, address, default_port
    ):
        return None
    return (
        f"this request was sent by a page of another site ({sent}), not by this viewer's own "
        "pages, so it is refused"
    )


class Guard(BaseHTTPMiddleware):
    """Refuse foreign names and foreign pages, ask for the access token when one is set, add the headers.

    ``address`` is where the viewer listens; without it, the address the ASGI server reports for
    the connection. Every check runs before a route reads a request's body.
    """

    def __init__(self, app: ASGIApp, access: str | None, address: Address | None = None) -> None:
        super().__init__(app)
        self.access = access
        self.address = address

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        """Refuse a request of another site or without the access token; take the token from the URL once."""
        address = self.address or _served_at(request)
        refused = refusal(request, address)
        if refused is not None:
            return _headers(PlainTextResponse(refused, 403))
        if self.access:
            cookie = cookie_name(address[1])
            given = request.query_params.get("token")
            if same(given, self.access):
                kept = RedirectResponse(request.url.remove_query_params("token"), 303)
                secure = request.url.scheme == "https"
                kept.set_cookie(
                    cookie, self.access, httponly=True, samesite="strict", secure=secure
                )
                return kept
            if not same(request.cookies.get(cookie), self.access):
                return _headers(
                    PlainTextResponse(
                        "this viewer needs its access token: open the URL `debate serve` printed",
                        403,
                    )
                )
        return _headers(await call_next(request))


def _served_at(request: Request) -> Address:
    """Return the address the ASGI server says the connection reached (loopback, any port, if it says none)."""
    server = request.scope.get("server")
    return (str(server[0]), server[1]) if server else ("localhost", None)


def _headers(response: Response) -> Response:
    response.headers.update(HEADERS)
    return response
