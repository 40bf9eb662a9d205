"""Counts in words: ``1 turn``, ``2 turns``; a report or a progress line never says ``1 turns`` or ``turn(s)``."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` and ``noun``, the noun in the plural unless ``n`` is 1 (``plural`` when adding an s is wrong)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
