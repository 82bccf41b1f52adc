"""The lab's stock agent: ``check_stock(sku)`` over the catalogue's warehouses.

"Stock de CHAISE-ERGO ?" is answered in text (and the figures as a data part,
for agents that call it); the tool call and its result are internal parts of
the task's history. A request that names no reference asks for one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...agent import Agent, AgentSkill, TaskContext
from ...protocol.model import DataPart, Role, TextPart
from ..settings import AgentSettings
from .catalogue import CATALOGUE
from .phrasing import answer, phrasing
from .request import Lang, read
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


class StockAgent(Agent):
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
        call = {"name": "check_stock", "args": {"sku": request.sku}}
        progress = (
            f"Checking the stock of {request.sku}…"
            if request.lang == "en"
            else f"Je consulte le stock de {request.sku}…"
        )
        await ctx.working([TextPart(progress), *ctx.internal(DataPart(call))])
        await asyncio.sleep(self.delay)
        result = check_stock(request.sku)
        await ctx.working(ctx.internal(DataPart({"name": "check_stock", "response": result})))
        await answer(
            ctx,
            self.phrasing,
            agent=self.name,
            fixed=stock_text(result, request.lang),
            figures=result,
            lang=request.lang,
            name="stock",
        )
        await ctx.complete()
