"""The pages a browser reads: the list, a debate (whole or its live part), its memory, a turn, a comparison."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from debate_engine.app.reports.charts import accuracy_svg, positions_svg
from debate_engine.app.reports.record import record_of
from debate_engine.app.reports.standing import (
    DONE,
    RUNNING,
    Write,
    failed_calls,
    reason_of,
    state_word,
    where,
)
from debate_engine.app.reports.verdict_section import verdict_line
from debate_engine.app.store.shared_limits import waits_in
from debate_engine.app.viewer import debate_view as view
from debate_engine.app.viewer.comparison_view import comparison_of
from debate_engine.app.viewer.debate_rows import FILTERS, matching, protocol_of
from debate_engine.app.viewer.memory_view import chains, turn_memory
from debate_engine.app.viewer.reading import Loaded, Reader
from debate_engine.app.viewer.start_form import form_fields
from debate_engine.app.viewer.templating import render

ROWS_PER_PAGE = 50
SVG_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"}
"""A chart opened on its own runs nothing either."""


def number(request: Request, name: str, default: int = 1) -> int:
    """Return a whole-number query parameter; anything else is the default."""
    text = request.query_params.get(name, "")
    return int(text) if text.isdigit() else default


async def debates(request: Request) -> Response:
    """List the debates, newest first, searched by problem, filtered by status, protocol and origin, and paged."""
    store = request.app.state.store
    query = request.query_params.get("q", "").strip()
    chosen = chosen_filters(request)
    every = await store.rows()
    rows = matching(every, chosen)
    if query:
        rows = [r for r in rows if query.casefold() in r["problem"].casefold()]
    shown, part = view.pager(len(rows), ROWS_PER_PAGE, number(request, "page"))
    page = rows[part]
    facts = {r["thread"]: row_facts(await store.channels(r["thread"])) for r in page}
    kept = [("q", query)] if query else []
    kept += [(name, value) for name, values in chosen.items() for value in values]
    return render(
        request,
        "list.html",
        rows=page,
        facts=facts,
        pager=shown,
        q=query,
        total=len(rows),
        every=len(every),
        chosen=chosen,
        filters=FILTERS,
        kept=urlencode(kept),
    )


def chosen_filters(request: Request) -> dict[str, list[str]]:
    """Return the list's filters the address gives; a value the list does not know is a 400 page naming those it does.

    An empty value means any (the form's first choice); a filter given twice keeps both values.
    """
    chosen: dict[str, list[str]] = {}
    for name, allowed in FILTERS.items():
        given = [value for value in request.query_params.getlist(name) if value]
        wrong = [value for value in given if value not in allowed]
        if wrong:
            raise HTTPException(
                400,
                f"the filter {name} has no value {wrong[0]!r}; choose one of: "
                f"{', '.join(allowed)} (or leave it empty for any {name})",
            )
        chosen[name] = list(dict.fromkeys(given))
    return chosen


def row_facts(channels: dict[str, Any]) -> dict[str, Any]:
    """Return what a list row shows beyond ``debate list``'s record: the protocol, the winning position, the verdict line."""
    return {
        "protocol": protocol_of(channels),
        "winner": view.winner(channels),
        "verdict": verdict_line(record_of(channels)) or "",
    }


async def loaded_or_404(request: Request) -> tuple[str, Loaded]:
    """Return the thread the URL names and its state; a 404 page when there is no such debate."""
    thread = request.path_params["thread"]
    loaded = await request.app.state.store.load(thread)
    if loaded is None:
        raise HTTPException(404, f"there is no debate {thread!r} in this database")
    return thread, loaded


async def standing(request: Request, thread: str) -> dict[str, Any]:
    """Return where a debate stands, this server's own run of it counted."""
    runs, store = request.app.state.runs, request.app.state.store
    now = await standing_of(store, thread, runs.running(thread), runs.failed.get(thread))
    db = getattr(store, "db", "")  # the pages under `langgraph dev` have no database of their own
    if now["status"] == RUNNING and db:
        now["rate_wait"] = await asyncio.to_thread(rate_wait, db, thread)
    if runs.running(thread):  # what its calls are writing now: the page shows it as it comes
        now["drafts"] = runs.drafts.of(thread)
    return now


def rate_wait(db: str, thread: str) -> dict[str, Any] | None:
    """Return the model a running debate waits on for its rate limit and the seconds left, as any process
    records it (``debate list`` reads the same); None when it waits on none."""
    found = waits_in(db).get(thread)
    return {"model": found[0], "seconds": round(found[1])} if found and found[1] > 0 else None


async def standing_of(
    store: Reader, thread: str, here: bool = False, failed: str | None = None
) -> dict[str, Any]:
    """Return where a debate stands: its newest checkpoint, ``debate list``'s status word, whether it waits or runs.

    ``here`` is whether this process runs it, ``failed`` how this process's run of it failed.
    """
    checkpoint, status, waiting = await store.newest(thread)
    phase = status.get("phase", "setup") if status else "setup"
    running = phase != DONE and not waiting and (here or await store.busy(thread))
    return {
        "checkpoint": checkpoint,
        "status": state_word(phase, waiting, running),
        "phase": phase,
        "round": status.get("round", 0) if status else 0,
        "where": where(status),
        "turns": status.get("turns", 0) if status else 0,
        "failed": failed,
    }


def live_part(
    loaded: Loaded, page: int, now: dict[str, Any], whole: bool = False
) -> dict[str, Any]:
    """Return what the live part of a debate page shows: why it stands so, the verdict, the grid or turns, figures.

    Why it stands so is ``debate list``'s reason, read from the checkpoint (``now`` holds its status
    word): a run another process started and that failed says so here as well as one of this server's.
    ``whole`` puts every round or turn on the one page (a shared debate's file).
    """
    values = loaded.values
    asked: list[Write] = [("", "__interrupt__", loaded.interrupts)]
    roundtable = view.is_roundtable(values)
    grid = None if roundtable else view.grid(values, page, whole)
    turns = view.turns_page(values, page, whole) if roundtable else None
    items = turns["turns"] if turns else grid["rounds"] if grid else []
    shown = [item["round"] for item in items]
    return {
        "values": values,
        "roundtable": roundtable,
        "grid": grid,
        "turns": turns,
        "positions": view.positions(values, range(min(shown), max(shown) + 1) if shown else None),
        "verdict": view.verdict(values),
        "short_answer": view.SHORT_ANSWER,
        "figures": loaded.once("figures", lambda: view.figures_view(values)),
        "solution": values.get("solution"),
        "why": reason_of(now["status"], loaded.record, [*loaded.trouble, *asked]),
        "failed_calls": failed_calls(loaded.trouble),
        "failure": None if loaded.trouble else now["failed"],
    }


async def debate(request: Request) -> Response:
    """Show one debate: everything it holds, the questions it waits on, and what can be done next."""
    thread, loaded = await loaded_or_404(request)
    now = await standing(request, thread)
    context = await debate_context(
        request.app.state.store, thread, loaded, now, number(request, "page")
    )
    return render(request, "debate.html", **context)


async def debate_context(
    store: Reader, thread: str, loaded: Loaded, now: dict[str, Any], page: int, whole: bool = False
) -> dict[str, Any]:
    """Return what the debate page shows: the debate, its questions, its fork family, its live part."""
    rows = await store.rows()
    family = view.family(thread, rows)
    verdicts = {t: ((await store.channels(t)).get("solution") or {}).get("verdict") for t in family}
    return {
        "thread": thread,
        "now": now,
        "questions": [(i.id, i.value) for i in loaded.interrupts],
        "tree": view.fork_tree(thread, rows, verdicts) if len(family) > 1 else None,
        "settings": loaded.values.get("settings") or {},
        **live_part(loaded, page, now, whole),
    }


async def live(request: Request) -> Response:
    """Return the live part of a debate page alone, for the page's script to put in place."""
    thread, loaded = await loaded_or_404(request)
    now = await standing(request, thread)
    return render(
        request,
        "live.html",
        thread=thread,
        now=now,
        **live_part(loaded, number(request, "page"), now),
    )


async def state(request: Request) -> Response:
    """Return where a debate stands as JSON: what the live page polls, a small read."""
    thread = request.path_params["thread"]
    now = await standing(request, thread)
    if now["checkpoint"] is None:
        raise HTTPException(404, f"there is no debate {thread!r} in this database")
    return JSONResponse(now)


def positions_image(loaded: Loaded) -> str | None:
    """Return a debate's positions chart as SVG, made once per version: the page's image and the shared file's."""
    chart: str | None = loaded.once("chart", lambda: positions_svg(loaded.record))
    return chart


async def positions_chart(request: Request) -> Response:
    """Return the positions chart as SVG (shown through an image, so nothing in it can run)."""
    _, loaded = await loaded_or_404(request)
    chart = positions_image(loaded)
    if chart is None:
        raise HTTPException(404, "this debate has no stated positions yet")
    return Response(chart, media_type="image/svg+xml", headers=SVG_HEADERS)


async def memory(request: Request) -> Response:
    """Show each agent's summary chain and the turns whose memory can be opened."""
    thread, loaded = await loaded_or_404(request)
    spoken = [t for t in loaded.values.get("transcript", []) if t.get("view")]
    shown, part = view.pager(len(spoken), view.TURNS_PER_PAGE, number(request, "page"))
    return render(
        request,
        "memory.html",
        thread=thread,
        chains=chains(loaded.values),
        spoken=spoken[part],
        pager=shown,
        roundtable=view.is_roundtable(loaded.values),
    )


async def turn(request: Request) -> Response:
    """Show what one turn's speaker saw."""
    thread, loaded = await loaded_or_404(request)
    seq = request.path_params["seq"]
    found = turn_memory(loaded.values, seq)
    if found is None:
        raise HTTPException(404, f"debate {thread!r} has no turn {seq}")
    return render(
        request,
        "turn.html",
        thread=thread,
        roundtable=view.is_roundtable(loaded.values),
        transcript=loaded.values.get("transcript", []),
        **found,
    )


def new_debate(request: Request) -> Response:
    """Show the form that starts a debate."""
    return render(request, "new.html", fields=form_fields(), form={}, errors={})


async def comparison(request: Request) -> Response:
    """Show a comparison: accuracy with intervals, the flip matrix, tokens and cost per task and per right answer."""
    name = request.path_params["name"]
    found = await comparison_of(request.app.state.store, name)
    if found is None:
        raise HTTPException(404, f"there is no comparison {name!r} in this database")
    return render(request, "comparison.html", name=name, **found)


async def accuracy_chart(request: Request) -> Response:
    """Return a comparison's accuracy chart as SVG."""
    found = await comparison_of(request.app.state.store, request.path_params["name"])
    if found is None or not found["summaries"]:
        raise HTTPException(404, "no comparison to chart")
    return Response(
        accuracy_svg(found["summaries"]), media_type="image/svg+xml", headers=SVG_HEADERS
    )
