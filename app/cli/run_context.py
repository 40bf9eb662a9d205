"""What a run's flags say: its problem, its context, and the settings they resolve to, checked before any call.

``debate run`` reads them here, and so do the other commands that start runs (``compare``, ``probe``,
``submit``) and the viewer's start form, so that every entry point turns the same flags into the same context.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.providers.secrets import redact


def problem_of(args: argparse.Namespace) -> str:
    """Return the problem from the argument or ``--problem-file``, redacted.

    It is stored in every checkpoint and shown by ``list``, ``show`` and the
    report; no debate needs the password of a URL quoted in it.
    """
    if args.problem_file:
        try:
            text = Path(args.problem_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot read problem file {args.problem_file}: {exc.strerror or exc}"
            ) from None
        except UnicodeDecodeError:
            raise InputError(
                f"problem file {args.problem_file} is not UTF-8 text; save it as UTF-8"
            ) from None
    else:
        text = args.problem or ""
    if not text.strip():
        raise InputError("no problem given; pass it as an argument or with --problem-file FILE")
    return redact(text.strip())


def context_from_args(args: argparse.Namespace, credentials: bool = True) -> Any:
    """Return the run's context from the flags, checked as the run will resolve it (see :func:`checked`)."""
    return checked_context(_context_of(args), credentials)


def resolved_from_args(args: argparse.Namespace, credentials: bool = True) -> tuple[Any, Any]:
    """Return the run's context from the flags and its settings, resolved once, here, where the run starts.

    ``credentials`` False leaves API keys unchecked: a dry run calls no model, so it needs none.
    """
    context = _context_of(args)
    return context, checked(context, credentials)


def _context_of(args: argparse.Namespace) -> Any:
    """Return the flags as the protocol's context (a ``Context`` or ``RoundtableContext``), unresolved."""
    from debate_engine.config.context import (  # start-up: langchain-core
        DEFAULT_VOTES,
        Context,
        RoundtableContext,
    )

    fields = context_fields(args)
    protocol = getattr(args, "protocol", "phases")
    votes, window = getattr(args, "escalate_votes", None), getattr(args, "escalate_window", None)
    if protocol != "escalate" and (votes is not None or window is not None):
        raise InputError("--votes and --window belong to escalate; add --protocol escalate")
    if protocol == "roundtable":
        return RoundtableContext(
            **fields, turns=args.turns, order=args.order or "", summary_every=args.summary_every
        )
    if (
        getattr(args, "turns", None)
        or getattr(args, "order", None)
        or getattr(args, "summary_every", None)
    ):
        raise InputError(
            "--turns, --order and --summary-every belong to the roundtable; add --protocol roundtable"
        )
    if protocol == "escalate":
        return Context(**fields, votes=DEFAULT_VOTES if votes is None else votes, window=window)
    return Context(**fields)


def context_fields(args: argparse.Namespace) -> dict[str, Any]:
    """Return the run flags as ``Context`` fields (a config file's path made absolute)."""
    if args.config is not None and not args.config.strip():
        raise InputError(
            "--config '': the path is empty; give a config file, or leave --config out to debate with "
            "the default agents (architect, performance, security)"
        )
    if args.config and not _is_file(args.config):
        raise InputError(f"config file {args.config} does not exist; check the path")
    return dict(
        model=args.model or "",
        agents=args.agents or "",
        humans=",".join(getattr(args, "human", None) or []),
        rounds=args.rounds,
        config_file=str(Path(args.config).resolve()) if args.config else "",
        clarify=args.clarify,
        max_output_tokens=args.max_output_tokens,
        context_window=args.context_window,
        max_concurrency=args.max_concurrency,
        rpm=args.rpm,
        tpm=args.tpm,
        timeout_s=args.timeout,
        summary_method=args.summary_method or "",
        summarize=False if args.no_summary else None,
        max_tokens=args.max_tokens,
        max_cost=args.max_cost,
        **(
            {"max_questions": args.max_questions}
            if getattr(args, "max_questions", None) is not None
            else {}
        ),
    )


def _is_file(path: str) -> bool:
    """Return True for a file that exists; a name too long for the file system is an input error, not a traceback."""
    try:
        return Path(path).is_file()
    except OSError as exc:
        raise InputError(f"config file {path}: {exc.strerror}; check the path") from None


def checked(context: Any, credentials: bool = True) -> Any:
    """Resolve ``context`` into the run's settings, so every mistake shows before any call.

    ``credentials`` False leaves API keys unchecked (a dry run needs none).
    """
    from debate_engine.config.resolve import resolve  # start-up: langchain-core
    from debate_engine.config.settings import is_human  # start-up: langchain-core
    from debate_engine.providers.factory import check_credentials  # start-up: asyncio, urllib

    settings = resolve(context)  # raises ConfigError listing every problem
    for profile in (*settings["agents"], settings["judge"]) if credentials else ():
        if not is_human(profile):  # a person's seat has no model, so no key
            check_credentials(profile["model"])  # a missing key is an input error, before any call
    return settings


def checked_context(context: Any, credentials: bool = True) -> Any:
    """Return ``context`` once it resolves (see :func:`checked`)."""
    checked(context, credentials)
    return context


def people(context: Any) -> list[str]:
    """Return the seats persons take in a run of ``context``."""
    from debate_engine.config.resolve import resolve  # start-up: langchain-core

    return seated(resolve(context))


def seated(settings: Any) -> list[str]:
    """Return the seats persons take in a run of these settings."""
    from debate_engine.config.settings import is_human  # start-up: langchain-core

    return [a["id"] for a in settings["agents"] if is_human(a)]
