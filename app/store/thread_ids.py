"""The one rule for a new thread id, checked wherever a person names one before its thread exists.

A thread id is the key a debate is stored under, and also a word typed on the
command line (``debate resume ID``) and a step of the viewer's web addresses
(``/debates/ID``). A ``/`` cannot be a step of a path, ``?`` and ``#`` end the
path, ``%`` starts an escape, whitespace splits a shell's words and control
characters cannot be seen, so a new id keeps to characters that are the same
in all three places. ``debate run``, ``fork``, ``submit`` and ``probe`` and the
viewer's start form refuse any other id before a thread is made.

Ids that exist already are never refused: a debate made through LangGraph's
own API may have any string as its id, and ``debate list``, ``show``,
``report``, ``resume`` and the viewer read it as it is.
"""

from __future__ import annotations

import unicodedata

from debate_engine.errors import InputError

MAX_LENGTH = 128
MARKS = "._:@-"
"""Punctuation a new id may hold besides letters and digits: none of it means anything in a path, a
query or a shell."""
RULE = (
    f"a new thread id is 1 to {MAX_LENGTH} characters: letters, digits and {' '.join(MARKS)}, "
    "starting with a letter or a digit"
)


class ThreadIdError(InputError):
    """A new thread id breaks the rule; nothing was stored."""


def check_thread_id(thread: str) -> str:
    """Return ``thread`` when it may name a new debate; else raise ThreadIdError naming the id, the character and the rule.

    The rule: 1 to 128 characters, each a letter or a digit of any script (``str.isalnum``) or one of
    ``. _ : @ -``; the first a letter or a digit, so that the id is never read as an option (``-x``)
    or as a path's own step (``.``, ``..``). Everything else is refused, ``/ ? # %``, whitespace and
    control characters among it.
    """
    if not thread:
        raise ThreadIdError(f"the thread id is empty; {RULE}")
    if len(thread) > MAX_LENGTH:
        raise ThreadIdError(f"thread id {thread!r} is {len(thread)} characters long; {RULE}")
    for place, char in enumerate(thread):
        if not (char.isalnum() or (place and char in MARKS)):
            where = "starts with" if place == 0 and char in MARKS else "holds"
            raise ThreadIdError(f"thread id {thread!r} {where} {_named(char)}; {RULE}")
    return thread


def _named(char: str) -> str:
    """Return a character as a message shows it: quoted when it can be seen, else by its code and name."""
    if char.isprintable() and not char.isspace():
        return repr(char)
    return f"U+{ord(char):04X} ({unicodedata.name(char, 'a control character').lower()})"
