"""Numbers as the lab's answers write them: French ``2 041,20 €``, English
``2,041.20 EUR``; ``0 unité``/``1 unité``/``2 unités`` (French counts 0 as one)."""

from __future__ import annotations

from decimal import Decimal

from ...wording import plural
from .request import Lang

__all__ = ["money", "units"]


def money(amount: Decimal, lang: Lang) -> str:
    english = f"{amount:,.2f}"
    if lang == "en":
        return f"{english} EUR"
    return english.replace(",", " ").replace(".", ",") + " €"


def units(count: int, lang: Lang) -> str:
    if lang == "en":
        return plural(count, "unit")
    return f"{count} unité" if count <= 1 else f"{count} unités"
