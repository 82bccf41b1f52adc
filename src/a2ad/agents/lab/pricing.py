"""The lab's pricing agent: ``get_price(sku, quantity)``, unit price before tax
and the volume discount that applies.

"Prix de 12 CHAISE-ERGO ?" is answered in text (and the figures as a data
part, for agents that call it); the tool call and its result are internal
parts of the task's history. No quantity means one unit; no reference asks
for one.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from ...agent import Agent, AgentSkill, TaskContext
from ...protocol.model import DataPart, Role, TextPart
from ..settings import AgentSettings
from .catalogue import CATALOGUE, CURRENCY, price
from .phrasing import answer, phrasing
from .request import Lang, read
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


class PricingAgent(Agent):
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

    def __init__(
        self,
        settings: AgentSettings | None = None,
        *,
        delay: float = 0.0,
        model: str | None = None,
        llm_base_url: str | None = None,
        llm_api_key: str | None = None,
    ) -> None:
        """With a model (``model``, else the settings'), the answer is worded by it
        (``phrasing``); ``delay``: seconds each tool call takes, to watch a stream
        or cancel one."""
        self.delay = delay
        self.phrasing = phrasing(
            self.name, settings, model=model, llm_base_url=llm_base_url, llm_api_key=llm_api_key
        )

    async def run(self, ctx: TaskContext) -> None:
        request = read(m.text for m in ctx.history if m.role is Role.USER)
        if request.sku is None:
            await ctx.require_input(
                "Which item? Give its reference, e.g. CHAISE-ERGO."
                if request.lang == "en"
                else "Quel article ? Donnez sa référence, par exemple CHAISE-ERGO."
            )
            return
        quantity = request.quantity or 1
        call = {"name": "get_price", "args": {"sku": request.sku, "quantity": quantity}}
        progress = (
            f"Pricing {units(quantity, request.lang)} of {request.sku}…"
            if request.lang == "en"
            else f"Je calcule le prix de {units(quantity, request.lang)} de {request.sku}…"
        )
        await ctx.working([TextPart(progress), *ctx.internal(DataPart(call))])
        await asyncio.sleep(self.delay)
        result = get_price(request.sku, quantity)
        await ctx.working(ctx.internal(DataPart({"name": "get_price", "response": result})))
        await answer(
            ctx,
            self.phrasing,
            agent=self.name,
            fixed=price_text(result, request.lang),
            figures=result,
            lang=request.lang,
            name="price",
        )
        await ctx.complete()
