"""A run's settings resolved once, where the run starts, and carried to its first node as they are.

Every entry point that starts a debate (``debate run``, ``compare``, ``probe``,
``submit`` and the worker, ``fork``, the viewer's start form) calls :func:`settle`
once: every mistake in the flags, the config file or the keys shows before a thread
exists, and the settings found are the ones the run keeps. The entry point then writes
:meth:`Settled.intake` as the graph's first node's update, so ``intake`` does not
resolve them again and a stop anywhere after resumes with them. ``invoke`` and Studio,
which hand the graph only a context, have ``intake`` resolve it: once as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from debate_engine.config.context import Context, context_dict
from debate_engine.config.resolve import resolve
from debate_engine.config.settings import RunSettings, is_human
from debate_engine.providers.factory import check_credentials


@dataclass(frozen=True)
class Settled:
    """A run's context and the settings it resolved to, at the entry point that starts the run."""

    context: Context
    settings: RunSettings

    @property
    def people(self) -> list[str]:
        """The seats persons take: their turns wait for answers, which some entry points cannot give."""
        return [a["id"] for a in self.settings["agents"] if is_human(a)]

    def intake(self, problem: str, protocol: str = "", **extra: Any) -> dict[str, Any]:
        """Return the first node's update that starts a run of these settings on ``problem``.

        ``protocol`` marks the context with the graph that runs it, as ``intake`` marks what it takes
        (``sample`` for compare's single and vote runs); by default the settings' own protocol.
        ``extra`` are the graph's other inputs (a sample's ``samples``).
        """
        marked = protocol or self.settings["protocol"]
        given = {
            **{k: v for k, v in context_dict(self.context).items() if k != "protocol"},
            "protocol": marked,
        }
        # a sample's settings name it from the start (its setup would): stopped before setup, it resumes on
        # the sample graph, which reads the graph from the settings
        settings = (
            self.settings
            if marked == self.settings["protocol"]
            else {**self.settings, "protocol": marked}
        )
        return {
            "problem": problem,
            "context": given,
            "context_taken": given,
            "settings": settings,
            **extra,
        }


def settle(context: Context, credentials: bool = True) -> Settled:
    """Resolve ``context`` into the run's settings, once, and check each model's key.

    Raises ConfigError listing every problem at once, and ModelConfigError for a missing key.
    ``credentials`` False leaves the keys unchecked: a dry run calls no model, so it needs none.
    """
    settings = resolve(context)
    for profile in (*settings["agents"], settings["judge"]) if credentials else ():
        if not is_human(profile):  # a person's seat has no model, so no key
            check_credentials(profile["model"])
    return Settled(context, settings)
