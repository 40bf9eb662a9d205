"""A run's rate limits: the config file's ``rateLimits`` by model and provider, and ``--rpm``/``--tpm`` for every
model the debate may call, resolved into the settings fixed in state.

Resolved inside a graph's run (its intake node), they are also declared to the process's limiter for that run's
thread, so its requests keep to them from the first one. Settings resolved where a run starts are declared as they
are written to its thread (``nodes.setup.begin``); a resumed run's, by ``debate resume``
(``app.store.shared_limits``) and by the worker that continues it (``app.store.queue``).
"""

from __future__ import annotations

import sys

from debate_engine.calls.limits import declare
from debate_engine.calls.rate_records import RateLimit, RateLimits
from debate_engine.config.context import Context
from debate_engine.config.file import DebateFile
from debate_engine.config.settings import AgentProfile, is_human


def rate_limits(context: Context, file: DebateFile, profiles: list[AgentProfile]) -> RateLimits:
    """Return the run's rate limits: the file's by model and by provider; the context's (the flags') on every
    model the debate may call, over the file's limit of the same kind."""
    section = file.rate_limits
    models = {spec: RateLimit(rpm=e.rpm, tpm=e.tpm) for spec, e in section.models.items()}
    if context.rpm or context.tpm:
        called = {
            s for p in profiles if not is_human(p) for s in (p["model"], *p["fallback_models"])
        }
        for spec in sorted(called):
            given = models.get(spec) or RateLimit(rpm=None, tpm=None)
            models[spec] = RateLimit(
                rpm=context.rpm or given["rpm"], tpm=context.tpm or given["tpm"]
            )
    limits = RateLimits(
        models=models,
        providers={k: RateLimit(rpm=e.rpm, tpm=e.tpm) for k, e in section.providers.items()},
        period_s=section.period_seconds,
    )
    run = running_thread()
    if run is not None:
        declare(run, limits)
    return limits


def running_thread() -> str | None:
    """Return the thread of the graph run resolving these settings, or None outside a run (a caller checking them
    first, a test): only the run's own settings may hold its requests."""
    loaded = sys.modules.get("langgraph.config")
    if (
        loaded is None
    ):  # no graph runs in a process that never loaded it; loading it here would slow start-up
        return None
    try:
        configurable = loaded.get_config().get("configurable") or {}
    except RuntimeError:
        return None
    return str(configurable.get("thread_id") or "")
