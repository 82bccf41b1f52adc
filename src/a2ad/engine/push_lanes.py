"""What a push lane calls (push.py): the store's outbox, a few calls at once,
and an HTTP client of its webhook's own."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

import httpx

from ..store.base import Delivery, WebhookKey, Webhooks, WebhookState

__all__ = ["LaneClients", "LaneOutbox"]


class LaneOutbox:
    """The store's outbox calls the lanes make, at most ``slots`` at once: a
    hundred lanes would otherwise hold every connection of PostgreSQL's pool
    between their webhooks' answers, and requests queue behind them (measured:
    sends fell from 310/s to 35/s during a burst of deliveries)."""

    def __init__(self, store: Webhooks, slots: int) -> None:
        self._store = store
        self._slots = asyncio.Semaphore(slots)

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        async with self._slots:
            return await self._store.get_webhook(key)

    async def deliveries(self, key: WebhookKey, limit: int) -> list[Delivery]:
        async with self._slots:
            return await self._store.deliveries(key, limit)

    async def claim_webhook(self, key: WebhookKey, until: float | None, claimant: str) -> bool:
        async with self._slots:
            return await self._store.claim_webhook(key, until, claimant)

    async def delivered(self, delivery: Delivery) -> bool:
        async with self._slots:
            return await self._store.delivered(delivery)

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        async with self._slots:
            return await self._store.delivery_failed(delivery, error, retry_at=retry_at)


class LaneClients:
    """An HTTP client per webhook, holding at most one connection, kept alive
    between its lane's runs. Not one shared pool: its bookkeeping on every
    request grows with the connections it holds (httpcore), and a connection of
    its own means no webhook waits for another's. The ``keep`` most recently
    used are kept while idle; older ones are closed."""

    def __init__(self, *, keep: int, timeout: float) -> None:
        self._keep = keep
        self._timeout = timeout
        self._tls = httpx.create_ssl_context()  # made once: it costs milliseconds
        self._idle: OrderedDict[WebhookKey, httpx.AsyncClient] = OrderedDict()
        self._open: set[httpx.AsyncClient] = set()  # idle or in use: closed by aclose

    def take(self, key: WebhookKey) -> httpx.AsyncClient:
        client = self._idle.pop(key, None)
        if client is None:
            client = httpx.AsyncClient(
                verify=self._tls,
                timeout=self._timeout,
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                follow_redirects=False,  # a redirect could lead where the guard would refuse
                trust_env=False,  # the address checked is the one connected to: no proxy
                headers={"User-Agent": "a2ad"},
            )
            self._open.add(client)
        return client

    async def give_back(self, key: WebhookKey, client: httpx.AsyncClient) -> None:
        self._idle[key] = client
        while len(self._idle) > self._keep:
            _, old = self._idle.popitem(last=False)
            await self._close(old)

    async def aclose(self) -> None:
        self._idle.clear()
        for client in list(self._open):
            await self._close(client)

    async def _close(self, client: httpx.AsyncClient) -> None:
        await client.aclose()
        self._open.discard(client)
