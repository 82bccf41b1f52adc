"""The lab's orchestrator: a quote from the stock and pricing agents, asked over A2A.

"Je voudrais un devis pour 12 CHAISE-ERGO" makes it stream two requests at
once, one to each agent, with a2ad's own client; their progress becomes
working updates of its own task, the calls and their results internal data
parts of its history, and the quote its artifact (text, and the figures as a
data part), worded by a model when one is configured (``phrasing``). A
request without a reference or a quantity asks for what is missing
(input-required); the follow-up, sent to the same task, fills it in. An
unknown reference asks for another.

On its own server (the URLs beneath its ``server_url``, as under ``a2ad demo``)
it calls as its caller: each call carries the turn's delegation token
(``TaskContext.delegation_token``), so the sub-tasks belong to whoever asked
for the quote and record the quote's task (``metadata.a2ad.via``). Another
server gets the configured ``token`` (``$A2AD_TOKEN``), a service identity,
or none.

Cancelling its task cancels its calls: each sub-task still running is
canceled on its server (CancelTask). So does a failure of one call for the
other. Each call is read by a task of its own, which a cancel of the agent's
run does not interrupt, so that a call whose first answer (the sub-task's id)
is still on its way is waited for, up to ``FIRST_ANSWER_WAIT`` seconds, and
canceled too; only then are the readers stopped.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from decimal import Decimal
from typing import Any

import httpx

from ...agent import Agent, AgentSkill, TaskContext
from ...client.client import Client, ClientError
from ...protocol.errors import A2AError
from ...protocol.model import (
    DataPart,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)
from ..settings import AgentSettings
from .phrasing import answer, phrasing
from .request import Lang, Request, read
from .wording import money, units

__all__ = ["OrchestratorAgent"]

log = logging.getLogger("a2ad.agents.lab")
FIRST_ANSWER_WAIT = 5.0
CALL_TIMEOUT = 30.0  # connecting, and each answer but a stream's silences


class CallFailed(Exception):
    """A sub-agent could not be reached, or its task did not complete."""


class _Call:
    """One request to a sub-agent, streamed; what it learnt of the sub-task."""

    def __init__(self, name: str, client: Client, text: str) -> None:
        self.name = name
        self.client = client
        self.text = text
        self.job: asyncio.Task[None] | None = None
        self.answered = asyncio.Event()  # the first answer came (or none will)
        self.task_id = ""
        self.state: TaskState | None = None
        self.status_text = ""
        self.result: dict[str, Any] | None = None

    @property
    def open(self) -> bool:
        """The sub-task exists and has not ended (as far as this call saw)."""
        return bool(self.task_id) and (self.state is None or not self.state.terminal)

    def start(self, ctx: TaskContext, lang: Lang) -> asyncio.Task[None]:
        """Read the call on a task of its own, which ``stop`` cancels and awaits."""
        self.job = asyncio.get_running_loop().create_task(self._read(ctx, lang))
        return self.job

    async def stop(self) -> BaseException | None:
        """Cancel the sub-task if it still runs (waiting a moment for its id if
        the call has not got it yet), stop reading; what the call raised."""
        assert self.job is not None
        try:
            if not self.job.done():
                try:
                    await asyncio.wait_for(self.answered.wait(), FIRST_ANSWER_WAIT)
                except TimeoutError:
                    log.warning("the %s agent gave no task id to cancel", self.name)
                await self.cancel()
        finally:
            self.job.cancel()
            await asyncio.wait([self.job])  # never raises: the job's outcome is read below
        return None if self.job.cancelled() else self.job.exception()

    async def _read(self, ctx: TaskContext, lang: Lang) -> None:
        try:
            await self._stream(ctx, lang)
        finally:
            self.answered.set()

    async def _stream(self, ctx: TaskContext, lang: Lang) -> None:
        try:
            async for event in self.client.stream(self.text):
                if isinstance(event, Task):
                    self.task_id = event.id
                    self.answered.set()
                    self._status(event.status.state, event.status.message or None)
                elif isinstance(event, TaskStatusUpdateEvent):
                    message = event.status.message or None
                    self._status(event.status.state, message)
                    if event.status.state is TaskState.WORKING and message and message.text:
                        await ctx.working(f"{self.name} : {message.text}")
                elif isinstance(event, TaskArtifactUpdateEvent):
                    self._take(event.artifact.parts)
                elif isinstance(event, Message):  # answered without a task
                    self.state = TaskState.COMPLETED
                    self._take(event.parts)
        except (ClientError, A2AError) as exc:
            raise CallFailed(_unreachable(self.name, self.client.url, exc, lang)) from None
        if self.state is not TaskState.COMPLETED or self.result is None:
            raise CallFailed(_did_not_complete(self, lang))
        response = {"name": self.name, "task_id": self.task_id, "response": self.result}
        await ctx.working(ctx.internal(DataPart(response)))

    def _status(self, state: TaskState, message: Message | None) -> None:
        self.state = state
        if message is not None and message.text:
            self.status_text = message.text

    def _take(self, parts: Any) -> None:
        for part in parts:
            if isinstance(part.data, dict) and "status" in part.data:
                self.result = part.data

    async def cancel(self) -> None:
        if not self.open:
            return
        try:
            await self.client.cancel_task(self.task_id)
        except (ClientError, A2AError) as exc:  # it ended meanwhile, or its server is gone
            log.info("could not cancel %s task %s: %s", self.name, self.task_id, exc)


class OrchestratorAgent(Agent):
    name = "orchestrator"
    description = (
        "Answers a quote (devis) for a quantity of an item, asking the stock and pricing "
        "agents over A2A (the lab's)."
    )
    skills = (
        AgentSkill(
            id="quote",
            name="Quote",
            description="Stock and price, volume discount applied, for N units of a reference; "
            "asks for the reference or the quantity when the request lacks one.",
            tags=["quote", "devis", "lab"],
            examples=["Je voudrais un devis pour 12 CHAISE-ERGO", "A quote for 3 BUREAU-120"],
        ),
    )

    def __init__(
        self,
        settings: AgentSettings | None = None,
        *,
        stock_url: str | None = None,
        pricing_url: str | None = None,
        token: str | None = None,
        model: str | None = None,
        llm_base_url: str | None = None,
        llm_api_key: str | None = None,
    ) -> None:
        """The agents' URLs: the arguments, else the settings' ``agent_urls``
        (``$A2AD_STOCK_URL``, ``$A2AD_PRICING_URL``), else this server's
        ``/agents/stock`` and ``/agents/pricing``. With a model (``model``, else
        the settings'), the quote is worded by it (``phrasing``). ``token``
        (else the settings') is sent to agents of another server than
        ``settings.server_url``; this server's get the caller's delegation."""
        settings = settings or AgentSettings()
        base = settings.server_url.rstrip("/")
        self._here = base + "/"
        self.stock_url = stock_url or settings.agent_urls.get("stock") or f"{base}/agents/stock"
        self.pricing_url = (
            pricing_url or settings.agent_urls.get("pricing") or f"{base}/agents/pricing"
        )
        self.token = token if token is not None else settings.token
        self._tls = ssl.create_default_context()
        self.phrasing = phrasing(
            self.name, settings, model=model, llm_base_url=llm_base_url, llm_api_key=llm_api_key
        )

    async def run(self, ctx: TaskContext) -> None:
        request = read(m.text for m in ctx.history if m.role is Role.USER)
        lang = request.lang
        if request.sku is None or not request.quantity:
            await ctx.require_input(_question(request))
            return
        sku, quantity = request.sku, request.quantity
        # One connection pool for both calls, and the TLS context made once:
        # making one per client costs more than the rest of a quote (measured).
        async with (
            httpx.AsyncClient(verify=self._tls, timeout=CALL_TIMEOUT) as http,
            Client(self.stock_url, token=self._token(ctx, self.stock_url), http=http) as s,
            Client(self.pricing_url, token=self._token(ctx, self.pricing_url), http=http) as p,
        ):
            stock = _Call("stock", s, _ask_stock(sku, lang))
            pricing = _Call("pricing", p, _ask_price(sku, quantity, lang))
            calls = (stock, pricing)
            asked = (
                f"Asking the stock and pricing agents about {units(quantity, lang)} of {sku}…"
                if lang == "en"
                else f"Je consulte les agents stock et pricing pour {units(quantity, lang)} "
                f"de {sku}…"
            )
            tools = [
                {"name": c.name, "args": {"request": c.text}, "url": c.client.url} for c in calls
            ]
            await ctx.working([TextPart(asked), *ctx.internal([DataPart(t) for t in tools])])
            try:
                # Not a TaskGroup: a cancel here must not interrupt the readers
                # before they have the sub-tasks' ids to cancel (see ``stop``).
                await asyncio.wait(
                    [call.start(ctx, lang) for call in calls],
                    return_when=asyncio.FIRST_EXCEPTION,
                )
            finally:
                # Canceled, or one call failed: the sub-tasks still running stop too.
                outcomes = await asyncio.gather(*(call.stop() for call in calls))
            for outcome in outcomes:
                if isinstance(outcome, CallFailed):
                    await ctx.fail(str(outcome))
                    return
                if outcome is not None:
                    raise outcome
        assert stock.result is not None and pricing.result is not None
        unknown = next((c.result for c in calls if c.result and c.result["status"] != "ok"), None)
        if unknown is not None:
            await ctx.require_input(_unknown(unknown, lang))
            return
        text = _quote_text(stock.result, pricing.result, lang)
        figures = {
            "sku": sku,
            "quantity": quantity,
            "in_stock": stock.result["total"],
            "warehouses": stock.result["warehouses"],
            "currency": pricing.result["currency"],
            "unit_price": pricing.result["unit_price"],
            "discount_percent": pricing.result["discount_percent"],
            "total": pricing.result["total"],
        }
        said = await answer(
            ctx,
            self.phrasing,
            agent=self.name,
            fixed=text,
            figures=figures,
            lang=lang,
            name="quote" if lang == "en" else "devis",
            markdown=True,
        )
        await ctx.complete(said)  # the answer's words in the history too (docs/protocol.md)

    def _token(self, ctx: TaskContext, url: str) -> str | None:
        """This server's agents get the caller's delegation (when the server
        has auth); another server, the configured token."""
        if url.startswith(self._here) or url.rstrip("/") == self._here[:-1]:
            return ctx.delegation_token() or self.token
        return self.token


def _ask_stock(sku: str, lang: Lang) -> str:
    return f"Stock of {sku}?" if lang == "en" else f"Stock de {sku} ?"


def _ask_price(sku: str, quantity: int, lang: Lang) -> str:
    return f"Price of {quantity} {sku}?" if lang == "en" else f"Prix de {quantity} {sku} ?"


def _question(request: Request) -> str:
    if request.lang == "en":
        if request.sku is None and not request.quantity:
            return "Which item, and how many? E.g. 12 CHAISE-ERGO."
        if request.sku is None:
            return (
                f"Which item do you want {request.quantity} of? "
                "Give its reference, e.g. CHAISE-ERGO."
            )
        return f"How many {request.sku} do you want?"
    if request.sku is None and not request.quantity:
        return "Quel article, et combien ? Par exemple : 12 CHAISE-ERGO."
    if request.sku is None:
        return (
            f"Quel article voulez-vous en {units(request.quantity or 0, 'fr')} ? "
            "Donnez sa référence, par exemple CHAISE-ERGO."
        )
    return f"Combien de {request.sku} voulez-vous ?"


def _unknown(result: dict[str, Any], lang: Lang) -> str:
    known = ", ".join(result.get("known", []))
    if lang == "en":
        return f"There is no item {result['sku']}. Which one do you mean? Known items: {known}."
    return (
        f"L'article {result['sku']} n'existe pas. Lequel voulez-vous ? Articles connus : {known}."
    )


def _unreachable(name: str, url: str, exc: ClientError | A2AError, lang: Lang) -> str:
    what = exc.message if isinstance(exc, ClientError) else f"{exc.code} {exc}"
    if lang == "en":
        return f"The {name} agent ({url}) did not answer: {what}"
    return f"L'agent {name} ({url}) n'a pas répondu : {what}"


def _did_not_complete(call: _Call, lang: Lang) -> str:
    state = call.state.name.lower().replace("_", "-") if call.state else "no answer"
    said = f": {call.status_text}" if call.status_text else ""
    if lang == "en":
        return f"The {call.name} agent's task ended {state}{said}"
    return f"La tâche de l'agent {call.name} s'est terminée en {state}{said}"


def _quote_text(stock: dict[str, Any], price: dict[str, Any], lang: Lang) -> str:
    sku, quantity, total_stock = price["sku"], price["quantity"], stock["total"]
    unit, total = Decimal(price["unit_price"]), Decimal(price["total"])
    percent = price["discount_percent"]
    where = stock["warehouses"]
    if lang == "en":
        lines = [
            f"Here is your quote for **{units(quantity, lang)}** of **{sku}**:",
            "### 1. Availability",
            f"* **Total in stock:** {units(total_stock, lang)}",
            *(f"  * {city} warehouse: {units(n, lang)}" for city, n in where.items()),
        ]
        if total_stock == 0:
            lines.append("* **Out of stock:** no unit is available now.")
        elif total_stock < quantity:
            lines.append(f"* **Short:** only {total_stock} of the {quantity} units are available.")
        lines += [
            "### 2. Pricing (before tax)",
            f"* **Unit price:** {money(unit, lang)}",
            f"* **Volume discount:** {f'{percent}%' if percent else 'none'}",
            f"* **Total before tax:** **{money(total, lang)}**",
        ]
        return "\n".join(lines)
    lines = [
        f"Voici votre devis pour **{units(quantity, lang)}** de la référence **{sku}** :",
        "### 1. Disponibilité en stock",
        f"* **Stock total disponible :** {units(total_stock, lang)}",
        *(f"  * Entrepôt de {city} : {units(n, lang)}" for city, n in where.items()),
    ]
    if total_stock == 0:
        lines.append("* **Rupture de stock :** aucune unité n'est disponible pour l'instant.")
    elif total_stock < quantity:
        lines.append(
            f"* **Stock insuffisant :** {units(total_stock, lang)} disponible(s) "
            f"sur les {quantity} demandées."
        )
    lines += [
        "### 2. Tarification (HT)",
        f"* **Prix unitaire HT :** {money(unit, lang)}",
        f"* **Remise sur volume appliquée :** {f'{percent} %' if percent else 'aucune'}",
        f"* **Montant total HT :** **{money(total, lang)}**",
    ]
    return "\n".join(lines)
