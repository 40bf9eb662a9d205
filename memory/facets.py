"""Summary facets: merged through the chain by code, rendered within a length.

The model may drop an identifier when it re-summarizes; merging the previous
record's facets into the new one keeps it, oldest out first when a list is
full.
"""

from __future__ import annotations

import re
from typing import Any, cast

from debate_engine.memory.records import SummaryFacets

FACET_CAPS: dict[str, int] = {
    "key_points": 12,
    "decisions": 10,
    "unresolved": 10,
    "action_items": 10,
    "participants": 12,
    "domain_entities": 30,
}
FACET_TITLES = {
    "domain_entities": "Entities",
    "decisions": "Decisions",
    "unresolved": "Unresolved",
    "action_items": "Action items",
    "key_points": "Key points",
    "participants": "Participants",
}


def empty_facets() -> SummaryFacets:
    """Facets with every list empty."""
    return SummaryFacets(
        key_points=[], decisions=[], unresolved=[], action_items=[], participants=[], domain_entities=[]
    )


def merge_facets(old: SummaryFacets | None, new: SummaryFacets) -> SummaryFacets:
    """Union ``old`` and ``new`` per facet without duplicates, capped, oldest dropped first."""
    merged = empty_facets()
    for name, cap in FACET_CAPS.items():
        seen: dict[str, str] = {}
        before = cast(dict[str, list[str]], old or {}).get(name, [])
        for item in [*before, *cast(dict[str, list[str]], new).get(name, [])]:
            item = " ".join(str(item).split())
            key = item.casefold()
            if item:
                seen.pop(key, None)
                seen[key] = item
        merged[name] = list(seen.values())[-cap:]  # type: ignore[literal-required]
    return merged


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def clip_at_boundary(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters at a sentence or line end, never mid-word."""
    if len(text) <= limit:
        return text
    window = text[: limit + 1]
    cuts = [m.start() for m in _SENTENCE_END.finditer(window) if m.start() <= limit]
    if cuts and cuts[-1] > limit // 3:
        return window[: cuts[-1]].rstrip()
    space = window.rfind(" ")
    if space > 0:
        return window[:space].rstrip() + " …"[: max(0, limit - space)]
    return ""


def render_summary(narrative: str, facets: SummaryFacets, max_length: int) -> str:
    """Render facets then narrative as text of at most ``max_length`` characters.

    Facets come first because they carry the identifiers the chain must keep;
    the narrative gets what room is left, cut at a sentence boundary.
    """
    lines: list[str] = []
    for name, title in FACET_TITLES.items():
        items = cast(dict[str, list[str]], facets).get(name, [])
        if not items:
            continue
        if name in ("domain_entities", "participants"):
            lines.append(f"{title}: " + ", ".join(items))
        else:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    while lines and len("\n".join(lines)) > max_length * 2 // 3:
        lines.pop()
    facet_text = "\n".join(lines)
    room = max_length - len(facet_text) - (2 if facet_text else 0)
    story = clip_at_boundary(" ".join(narrative.split()), room) if room > 0 else ""
    return "\n\n".join(p for p in (facet_text, story) if p)


REGISTRY_FACETS = ("decisions", "unresolved", "action_items", "domain_entities")
"""What the judge and the report are shown from the registry: the debate's outcome and its identifiers."""


def registry_digest(registry: dict[str, dict[str, Any]], per_facet: int = 8) -> list[tuple[str, list[tuple[str, int]]]]:
    """Per facet, the items the most summaries recorded (ties: the most recently seen first).

    A long debate's summaries cap their facet lists, so an early decision can
    fall out of every summary; the registry keeps it, and how often it came up.
    """
    out = []
    for name in REGISTRY_FACETS:
        entries = list((registry.get(name) or {}).values())
        entries.sort(key=lambda e: (-int(e.get("count", 1)), -int(e.get("last_seen", 0))))
        if entries:
            out.append((FACET_TITLES[name], [(str(e["text"]), int(e.get("count", 1))) for e in entries[:per_facet]]))
    return out


def render_digest(registry: dict[str, dict[str, Any]], per_facet: int = 8) -> str:
    """The digest as lines for a prompt: ``- Decisions: a (x3); b``."""
    lines = []
    for title, items in registry_digest(registry, per_facet):
        lines.append(f"- {title}: " + "; ".join(text + (f" (x{count})" if count > 1 else "") for text, count in items))
    return "\n".join(lines)
