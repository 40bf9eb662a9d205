"""Summary facets: merged through the chain by code, rendered whole or shortened for a view.

The model may drop an item when it re-summarizes; merging the previous
record's facets into the new one keeps it, oldest out first when a list is
full. The identifiers facet is not the model's: it is lifted by code
(``memory.identifiers``) and always rendered first.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from debate_engine.memory.identifiers import line as identifier_line
from debate_engine.memory.records import SummaryFacets
from debate_engine.memory.tokens import count_tokens

FacetName = Literal[
    "key_points", "decisions", "unresolved", "action_items", "participants", "domain_entities"
]
"""The facets the model writes (the identifiers are lifted by code)."""
FACET_CAPS: dict[FacetName, int] = {
    "key_points": 12,
    "decisions": 10,
    "unresolved": 10,
    "action_items": 10,
    "participants": 12,
    "domain_entities": 30,
}
FACET_TITLES: dict[FacetName, str] = {
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
        key_points=[],
        decisions=[],
        unresolved=[],
        action_items=[],
        participants=[],
        domain_entities=[],
    )


def merge_facets(
    old: SummaryFacets | None, new: SummaryFacets, limit_tokens: int | None = None
) -> SummaryFacets:
    """Union ``old`` and ``new`` per facet without duplicates, the oldest out first when a list is full.

    ``new`` is one answer the model was paid for: it is kept whole. What ``old`` adds is capped per facet,
    and to ``limit_tokens`` rendered, so a chain of verbose answers cannot outgrow the fold that reads it.
    """
    merged = empty_facets()
    carried: list[tuple[FacetName, str]] = []  # (facet, item) from ``old``, oldest first
    for name, cap in FACET_CAPS.items():
        seen: dict[str, str] = {}
        fresh = [" ".join(str(i).split()) for i in new.get(name, [])]
        for item in [*(old.get(name, []) if old else []), *fresh]:
            item = " ".join(str(item).split())
            if item:
                seen.pop(item.casefold(), None)
                seen[item.casefold()] = item
        kept = list(seen.values())[-max(cap, len(fresh)) :]
        merged[name] = kept
        news = {i.casefold() for i in fresh}
        carried += [(name, i) for i in kept if i.casefold() not in news]
    if limit_tokens is not None:
        while carried and count_tokens(render_facets(merged)) > limit_tokens:
            name, item = carried.pop(0)
            merged[name].remove(item)
    if "identifiers" in new:
        merged["identifiers"] = list(new["identifiers"])
    return merged


def render_facets(facets: SummaryFacets) -> str:
    """Return the model's facets as prompt lines (the identifiers apart: :func:`render_summary` puts them first)."""
    lines: list[str] = []
    for name, title in FACET_TITLES.items():
        items = facets.get(name, [])
        if not items:
            continue
        if name in ("domain_entities", "participants"):
            lines.append(f"{title}: " + ", ".join(items))
        else:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    return "\n".join(lines)


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


def render_summary(narrative: str, facets: SummaryFacets, max_length: int | None = None) -> str:
    """Return the summary as text: identifiers, the other facets, then the narrative; whole when ``max_length`` is None.

    Shortened to ``max_length`` characters, the identifiers stay first (they are what the chain must keep,
    the lowest ranked out first when even they do not fit), the other facets take at most two thirds of what
    is left, and the narrative gets the rest, cut at a sentence boundary.
    """
    idents = list(facets.get("identifiers") or [])
    story = " ".join(narrative.split())
    if max_length is None:
        return "\n\n".join(p for p in (identifier_line(idents), render_facets(facets), story) if p)
    while idents and len(identifier_line(idents)) > max_length:
        idents.pop()
    head = identifier_line(idents)
    room = max_length - len(head) - (2 if head else 0)
    lines = render_facets(facets).splitlines()
    while lines and len("\n".join(lines)) > room * 2 // 3:
        lines.pop()
    facet_text = "\n".join(lines)
    room -= len(facet_text) + (2 if facet_text else 0)
    story = clip_at_boundary(story, room) if room > 0 else ""
    return "\n\n".join(p for p in (head, facet_text, story) if p)


REGISTRY_FACETS: tuple[FacetName, ...] = (
    "decisions",
    "unresolved",
    "action_items",
    "domain_entities",
)
"""What the judge and the report are shown from the registry: the debate's outcome and its identifiers."""


def registry_digest(
    registry: dict[str, dict[str, Any]], per_facet: int = 8
) -> list[tuple[str, list[tuple[str, int]]]]:
    """Per facet, the items the most summaries recorded (ties: the most recently seen first).

    A long debate's summaries cap their facet lists, so an early decision can
    fall out of every summary; the registry keeps it, and how often it came up.
    """
    out = []
    for name in REGISTRY_FACETS:
        entries = list((registry.get(name) or {}).values())
        entries.sort(key=lambda e: (-int(e.get("count", 1)), -int(e.get("last_seen", 0))))
        if entries:
            out.append(
                (
                    FACET_TITLES[name],
                    [(str(e["text"]), int(e.get("count", 1))) for e in entries[:per_facet]],
                )
            )
    return out


def render_digest(registry: dict[str, dict[str, Any]], per_facet: int = 8) -> str:
    """Return the digest as lines for a prompt: ``- Decisions: a (x3); b``."""
    lines = []
    for title, items in registry_digest(registry, per_facet):
        lines.append(
            f"- {title}: "
            + "; ".join(text + (f" (x{count})" if count > 1 else "") for text, count in items)
        )
    return "\n".join(lines)
