"""The lab's stock agent: ``check_stock(sku)`` over the catalogue's warehouses.

"Stock de CHAISE-ERGO ?" is answered in text (and the figures as a data part,
for agents that call it); the tool call and its result are internal parts of
the task's history. A request that names no reference asks for one.
"""

from __future__ import annotations

from typing import Any

from ...agent import AgentSkill
from .catalogue import CATALOGUE
from .lookup import LookupAgent
from .request import Lang, Request
from .wording import units

__all__ = ["StockAgent", "check_stock"]


def check_stock(sku: str) -> dict[str, Any]:
    """The tool: units per warehouse, or ``status: unknown``."""
    item = CATALOGUE.get(sku)
    if item is None:
        return {"status": "unknown", "sku": sku, "known": sorted(CATALOGUE)}
    return {"status": "ok", "sku": sku, "total": item.total, "warehouses": dict(item.stock)}


def stock_text(result: dict[str, Any], lang: Lang) -> str:
    sku = result["sku"]
    if result["status"] == "unknown":
        known = ", ".join(result["known"])
        if lang == "en":
            return f"There is no item {sku} in the inventory (known items: {known})."
        return f"L'article {sku} n'existe pas dans l'inventaire (articles connus : {known})."
    total, where = result["total"], result["warehouses"]
    if lang == "en":
        spread = ", ".join(f"{n} in {city}" for city, n in where.items())
        if total == 0:
            return f"{sku} is out of stock ({spread})."
        return f"{units(total, lang)} of {sku} are in stock in total: {spread}."
    places = [f"{units(n, lang)} dans l'entrepôt de {city}" for city, n in where.items()]
    spread = " et ".join([", ".join(places[:-1]), places[-1]] if len(places) > 1 else places)
    if total == 0:
        return f"L'article {sku} est en rupture de stock ({spread})."
    return (
        f"Le stock disponible pour l'article {sku} est de {units(total, lang)} au total, "
        f"réparties avec {spread}."
    )


class StockAgent(LookupAgent):
    name = "stock"
    description = "Tells how many units of an item are in stock, per warehouse (the lab's)."
    skills = (
        AgentSkill(
            id="check_stock",
            name="Check stock",
            description="Units in stock of a reference, in each warehouse.",
            tags=["stock", "lab"],
            examples=["Stock de CHAISE-ERGO ?", "Stock of BUREAU-120?"],
        ),
    )

    tool = "check_stock"
    artifact = "stock"

    def arguments(self, request: Request) -> dict[str, Any]:
        return {"sku": request.sku}

    def progress(self, arguments: dict[str, Any], lang: Lang) -> str:
        sku = arguments["sku"]
        return (
            f"Checking the stock of {sku}…" if lang == "en" else f"Je consulte le stock de {sku}…"
        )

    def lookup(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return check_stock(arguments["sku"])

    def wording(self, result: dict[str, Any], lang: Lang) -> str:
        return stock_text(result, lang)
