"""What a run's flags say: its problem, its context, and the settings they resolve to, checked before any call.

``debate run`` reads them here, and so do the other commands that start runs (``compare``, ``probe``,
``submit``) and the viewer's start form, so that every entry point turns the same flags into the same context.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate_engine.app.cli.exit_codes import InputError
from debate_engine.providers.secrets import redact

if TYPE_CHECKING:
    from debate_engine.config.settled import Settled


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


def settled_from_args(args: argparse.Namespace, credentials: bool = True) -> Settled:
    """Return the run's context from the flags and its settings, resolved once, here, where the run starts.

    ``credentials`` False leaves API keys unchecked: a dry run calls no model, so it needs none.
    """
    from debate_engine.config.settled import settle  # start-up: langchain-core

    return settle(context_of_flags(args), credentials)


def context_of_flags(args: argparse.Namespace) -> Any:
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
        anonymous=True if getattr(args, "anonymous", False) else None,
        max_tokens=args.max_tokens,
        max_cost=args.max_cost,
        on_agent_failure=getattr(args, "on_agent_failure", None),
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
