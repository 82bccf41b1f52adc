"""The lab's pricing agent: ``get_price(sku, quantity)``, unit price before tax
and the volume discount that applies.

"Prix de 12 CHAISE-ERGO ?" is answered in text (and the figures as a data
part, for agents that call it); the tool call and its result are internal
parts of the task's history. No quantity means one unit; no reference asks
for one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ...agent import AgentSkill
from .catalogue import CATALOGUE, CURRENCY, price
from .lookup import LookupAgent
from .request import Lang, Request
from .wording import money, units

__all__ = ["PricingAgent", "get_price"]


def get_price(sku: str, quantity: int) -> dict[str, Any]:
    """The tool: prices as decimal strings (exact), or ``status: unknown``."""
    item = CATALOGUE.get(sku)
    if item is None:
        return {"status": "unknown", "sku": sku, "known": sorted(CATALOGUE)}
    line = price(item, quantity)
    return {
        "status": "ok",
        "sku": sku,
        "quantity": quantity,
        "currency": CURRENCY,
        "unit_price": str(line.unit_price),
        "discount_percent": line.discount_percent,
        "total": str(line.total),
    }


def price_text(result: dict[str, Any], lang: Lang) -> str:
    sku = result["sku"]
    if result["status"] == "unknown":
        known = ", ".join(result["known"])
        if lang == "en":
            return f"There is no price for {sku}: no such item (known items: {known})."
        return f"Pas de prix pour {sku} : cet article n'existe pas (articles connus : {known})."
    unit, total = Decimal(result["unit_price"]), Decimal(result["total"])
    quantity, percent = result["quantity"], result["discount_percent"]
    if lang == "en":
        discount = f"a {percent}% volume discount" if percent else "no volume discount"
        return (
            f"{sku} costs {money(unit, lang)} per unit before tax; for {units(quantity, lang)}, "
            f"{discount} applies: {money(total, lang)} before tax."
        )
    discount = f"une remise de {percent} %" if percent else "aucune remise"
    return (
        f"Le prix unitaire de {sku} est de {money(unit, lang)} HT ; pour "
        f"{units(quantity, lang)}, {discount} s'applique : {money(total, lang)} HT."
    )


class PricingAgent(LookupAgent):
    name = "pricing"
    description = "Gives an item's unit price before tax and its volume discount (the lab's)."
    skills = (
        AgentSkill(
            id="get_price",
            name="Price",
            description="Unit price before tax, volume discount and total for a quantity.",
            tags=["pricing", "lab"],
            examples=["Prix de 12 CHAISE-ERGO ?", "Price of 3 BUREAU-120?"],
        ),
    )

    tool = "get_price"
    artifact = "price"

    def arguments(self, request: Request) -> dict[str, Any]:
        return {"sku": request.sku, "quantity": request.quantity or 1}

    def progress(self, arguments: dict[str, Any], lang: Lang) -> str:
        sku, many = arguments["sku"], units(arguments["quantity"], lang)
        if lang == "en":
            return f"Pricing {many} of {sku}…"
        return f"Je calcule le prix de {many} de {sku}…"

    def lookup(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return get_price(arguments["sku"], arguments["quantity"])

    def wording(self, result: dict[str, Any], lang: Lang) -> str:
        return price_text(result, lang)
