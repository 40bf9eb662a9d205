"""``debate serve``: watch, read and steer the stored debates in a browser, offline."""

from __future__ import annotations

import argparse
from typing import Any

from debate_engine.app.cli.outputs import add_db, db_of

DEFAULT_PORT = 8765


def register(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="watch, read and steer debates in the browser",
        description="Serve a local web viewer over the debate database: the list, each debate's "
        "rounds, positions, verdict, memory and figures, live while it runs; start, answer, resume "
        "and fork debates. Everything is served from this machine; Ctrl-C stops it.",
    )
    add_db(serve)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other address needs an access token)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    serve.add_argument(
        "--token",
        help="the access token every request needs, at least 8 characters (default: none on "
        "loopback, a new one printed with the URL on any other address)",
    )
    serve.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve https with this PEM certificate (with --tls-key); without it, off loopback "
        "the token and the pages travel in clear text",
    )
    serve.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM private key")
    serve.add_argument("--open", action="store_true", help="open the viewer in the browser")


def main(args: argparse.Namespace) -> int:
    from debate_engine.app.viewer.serving import (  # start-up: Starlette and LangGraph load here
        serve,
    )

    return serve(
        db_of(args), args.host, args.port, args.token, args.open, args.tls_cert, args.tls_key
    )
