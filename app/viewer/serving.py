"""Serve the viewer: check the database, bind the address, print the URL, run until Ctrl-C.

Everything that can be wrong is found before the server serves: a database
that cannot be opened (exit 2 for a bad path, 5 for a PostgreSQL server that
fails), an address in use, a public address without a token, a certificate or
key that is missing or unusable. Off loopback the token and the pages travel
in clear text unless a certificate and key are given: the server says so.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
import threading
import webbrowser
from pathlib import Path

import uvicorn

from debate_engine.app.store.database import DatabaseInputError, is_postgres, open_checkpointer
from debate_engine.app.viewer.guard import is_loopback, new_token
from debate_engine.app.viewer.site import create_app
from debate_engine.errors import EXIT_OK, InputError, StorageError
from debate_engine.providers.secrets import redact

LOG = logging.getLogger("debate.viewer")
MIN_TOKEN = 8
"""The shortest ``--token`` accepted."""


class ServerUnreachable(StorageError):
    """The PostgreSQL server named by ``--db`` cannot be used: exit 5, before the viewer binds."""


async def check_db(db: str) -> None:
    """Open and close the database once, so a bad one fails before the server binds."""
    try:
        async with open_checkpointer(db):
            pass
    except DatabaseInputError as exc:
        if is_postgres(db):
            raise ServerUnreachable(redact(str(exc))) from None
        raise


def bind(host: str, port: int) -> socket.socket:
    """Return a listening socket on ``host:port``; a named error when the address cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (socket.gaierror, UnicodeError):
        sock.close()
        raise InputError(f"--host {host}: not an address of this machine") from None
    except OSError as exc:
        sock.close()
        raise InputError(
            f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); "
            "pick another --port (0 picks a free one)"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(host: str, port: int, token: str | None, tls: bool = False) -> str:
    """Return the address to open (with the token when one is needed)."""
    shown = f"[{host}]" if ":" in host else host
    scheme = "https" if tls else "http"
    return f"{scheme}://{shown}:{port}/" + (f"?token={token}" if token else "")


def checked_tls(cert: str | None, key: str | None) -> bool:
    """Return whether to serve TLS; a named error for a lone or missing certificate or key file."""
    if cert is None and key is None:
        return False
    if cert is None or key is None:
        raise InputError(
            "--tls-cert and --tls-key go together: give the certificate and its private key"
        )
    for flag, path, what in (("--tls-cert", cert, "certificate"), ("--tls-key", key, "key")):
        if not Path(path).is_file():
            raise InputError(f"{flag} {path}: no such file; give the {what} as a PEM file")
    return True


def serve(
    db: str,
    host: str,
    port: int,
    token: str | None,
    open_browser: bool,
    tls_cert: str | None = None,
    tls_key: str | None = None,
) -> int:
    """Serve the viewer over ``db`` until Ctrl-C; return the exit code."""
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: give a port from 1 to 65535 (0 picks a free one)")
    if token is not None and len(token) < MIN_TOKEN:
        raise InputError(
            f"--token: give at least {MIN_TOKEN} characters, or leave it out to get a new one"
        )
    tls = checked_tls(tls_cert, tls_key)
    asyncio.run(check_db(db))
    if token is None and not is_loopback(host):
        token = new_token()
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    url = url_of(host, bound, token, tls)
    config = uvicorn.Config(
        create_app(db, token, (host, bound)),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
    )
    server = uvicorn.Server(config)
    try:
        loaded(config)
        stop_on_interrupt(server)  # from here a Ctrl-C stops the server, however early it comes
        # the socket listens already: a browser opened now waits for the first page, never fails
        print(f"debate serve: {url}  (database {redact(db)}; Ctrl-C stops)", flush=True)
        if not tls and not is_loopback(host):
            LOG.warning(
                "debate serve: the access token and every page travel in clear text over "
                "http; anyone on the network path can read them: give --tls-cert and --tls-key"
            )
        if open_browser:
            threading.Timer(0.5, webbrowser.open, [url]).start()
        if not server.should_exit:
            server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C before the handler above was set
        pass
    finally:
        sock.close()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)
    print("debate serve: stopped", file=sys.stderr)
    return EXIT_OK


def stop_on_interrupt(server: uvicorn.Server) -> None:
    """Make a Ctrl-C before uvicorn takes the signal over stop the server, not vanish.

    uvicorn installs its handler only once its loop runs; a SIGINT in between would otherwise be lost in
    asyncio's start-up and the server keep serving. This handler asks the server to exit: it starts, sees
    ``should_exit`` and shuts down at once (uvicorn puts this handler back when it returns).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda signum, frame: setattr(server, "should_exit", True))


def loaded(config: uvicorn.Config) -> None:
    """Load uvicorn's settings now, so a certificate or key it cannot use is an error before the URL."""
    try:
        config.load()
    except OSError as exc:  # ssl.SSLError among them: not a certificate, or not its key
        raise InputError(
            f"--tls-cert / --tls-key: cannot serve TLS with them ({exc}); give a PEM "
            "certificate and its unencrypted private key"
        ) from None
