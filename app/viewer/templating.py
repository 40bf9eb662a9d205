"""The viewer's templates: one Jinja2 environment, every value escaped, every page redacted on its way out."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from debate_engine import __version__
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
    env.filters["money"] = lambda value: f"${float(value or 0):.4f}"
    env.filters["number"] = lambda value: (
        f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
    )
    env.filters["when"] = lambda at: time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
    env.globals["version"] = __version__
    return env


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
