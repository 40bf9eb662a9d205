"""Load and render the Markdown prompt templates.

Templates use ``{name}`` placeholders. Rendering fails loudly when a
placeholder has no value, so a typo in a template or a caller never sends a
half-filled prompt to a model. Values are inserted as they are: braces inside
a proposal are never read as placeholders.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).parent
PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
log = logging.getLogger("debate.prompts")


class PromptError(KeyError):
    """A template is missing, or a placeholder in it has no value."""

    def __str__(self) -> str:
        return str(self.args[0])


def role_names() -> list[str]:
    """Return the built-in roles, the judge excluded."""
    return sorted(p.stem for p in (HERE / "roles").glob("*.md") if p.stem != "judge")


@lru_cache(maxsize=64)
def load_prompt(name: str) -> str:
    """Return the template ``name`` (``roles/security``, ``phases/critique``)."""
    path = HERE / f"{name}.md"
    if not path.is_file():
        raise PromptError(f"no prompt template {name!r} (looked for {path})")
    return path.read_text(encoding="utf-8").strip()


def render(template: str, **values: object) -> str:
    """Fill every ``{placeholder}`` of ``template``; raise PromptError naming any missing one."""
    missing = sorted({m for m in PLACEHOLDER.findall(template) if m not in values})
    if missing:
        raise PromptError(f"prompt placeholder(s) without a value: {', '.join(missing)}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def read_prompt_file(path: str | None, what: str) -> str | None:
    """Read a user's prompt file, or warn naming it and return None to fall back.

    Setup reads it once per debate and fixes its text in the settings; it is not
    cached, so a file edited between two debates of one process (a dev server)
    is read anew.
    """
    if not path:
        return None
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, RuntimeError, ValueError) as exc:  # missing, ~nobody, NUL byte, not UTF-8
        reason = getattr(exc, "strerror", None) or (
            "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc
        )
        log.warning("cannot read %s %s (%s); using the built-in prompt", what, path, reason)
        return None
    if not text:
        log.warning("%s %s is empty; using the built-in prompt", what, path)
        return None
    return text
