"""Reading the lab's requests, in French or English, without a model.

A product is a reference in capitals with dashes (``CHAISE-ERGO``,
``BUREAU-120``); a known one is also found in lower case. A quantity is a
number written in digits that is not part of a reference. The language is
French unless the text reads as English ("quote", "price", "how many", ...).
Several texts (a task's turns, oldest first) are read together: a later turn's
product or quantity replaces an earlier one's, so a follow-up fills in what
was missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .catalogue import CATALOGUE

__all__ = ["Lang", "Request", "read"]

Lang = Literal["fr", "en"]

_REFERENCE = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+(?![\w-])")
_KNOWN = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(sku) for sku in CATALOGUE) + r")(?![\w-])", re.IGNORECASE
)
_QUANTITY = re.compile(r"(?<![\w.,-])(\d{1,6})(?![\d.,]\d)(?:\s*(?:x|×)(?![\w]))?")
_ENGLISH = re.compile(
    r"\b(quote|price|prices|pricing|how many|stock of|units?|please|want|need|would like|"
    r"i'd|for|of|the|in)\b",
    re.IGNORECASE,
)
_FRENCH = re.compile(
    r"\b(devis|prix|combien|unités?|voudrais|veux|pour|stock de|de|des|du|le|la|les|en|"
    r"bonjour|merci|s'il)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Request:
    sku: str | None  # as written, upper-cased; may be unknown to the catalogue
    quantity: int | None
    lang: Lang


def read(texts: Iterable[str]) -> Request:
    """What ``texts`` ask for, later texts overriding earlier ones."""
    sku: str | None = None
    quantity: int | None = None
    english = french = 0
    for text in texts:
        found_sku, rest = _reference(text)
        sku = found_sku or sku
        numbers = [int(m.group(1)) for m in _QUANTITY.finditer(rest)]
        if numbers:
            quantity = numbers[-1]
        english += len(_ENGLISH.findall(text))
        french += len(_FRENCH.findall(text))
    return Request(sku=sku, quantity=quantity, lang="en" if english > french else "fr")


def _reference(text: str) -> tuple[str | None, str]:
    """The last reference ``text`` names (a known one first), and the text without
    any reference, where quantities are looked for."""
    known = _KNOWN.findall(text)
    written = _REFERENCE.findall(text)
    sku = known[-1].upper() if known else written[-1] if written else None
    rest = _REFERENCE.sub(" ", _KNOWN.sub(" ", text))
    return sku, rest
