"""The one reader of the numbers in a model's answers: the debate's agreement key and ``compare``'s scoring use it.

A number is digits (commas only between groups of three), a decimal point and fraction, an exponent
(``1e3`` is 1000) and a sign, which models and word processors also write as the typographic minus
(U+2212) or its small and full-width forms. Its value is read digit by digit into a key, never through
a float or a decimal context: ``42``, ``42.0``, ``4.2e1`` and ``+42`` have one key, ``1234567`` and
``1234568`` two, and a key is as short as the text however large its exponent.
"""

from __future__ import annotations

import re

NUMBER = re.compile(r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?")
"""A number as it is written, once its text is ``plain``."""
MINUS_SIGNS = str.maketrans(dict.fromkeys("\u2212\ufe63\uff0d", "-"))
"""The minus sign (U+2212), the small (U+FE63) and the full-width hyphen-minus (U+FF0D): read as ``-``."""


def plain(text: str | None) -> str:
    """Return an answer as it is compared: spacing and case aside, a final full stop dropped, minus as ``-``."""
    return " ".join(str(text or "").split()).casefold().rstrip(".").translate(MINUS_SIGNS)


def whole_number(text: str | None) -> str | None:
    """Return the key of an answer that is a number and nothing else (None: it is not one)."""
    found = NUMBER.fullmatch(plain(text))
    return number_key(found[0]) if found else None


def first_number(text: str | None) -> str | None:
    """Return the key of the first number in an answer's text (None: it holds none)."""
    found = NUMBER.search(plain(text))
    return number_key(found[0]) if found else None


def number_key(text: str) -> str:
    """Return a number's exact value as ``DIGITSeEXPONENT``, the same however it is spelled.

    ``text`` is one ``NUMBER`` of a ``plain`` text. Trailing zeros move into the exponent, so ``42``,
    ``42.0`` and ``4.2e1`` agree; 0, 0.00 and -0 are one value.
    """
    mantissa, _, exponent = text.replace(",", "").partition("e")
    whole, _, fraction = mantissa.lstrip("+-").partition(".")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return "0"
    kept = digits.rstrip("0")
    power = int(exponent or 0) - len(fraction) + len(digits) - len(kept)
    return f"{'-' if mantissa.startswith('-') else ''}{kept}e{power}"
