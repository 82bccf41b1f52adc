"""The served application's lifetime: start, shut down, close; in a2ad's order.

``Lifetime`` owns what starts and stops with the server: the engine (its
store, bus, upkeep and running agents) and the metrics' background work (the
group's shared directory, /metrics on a port of its own). The assembly
(a2ad/assembly.py) makes it; the ASGI app's lifespan (app.py) and ``a2ad
serve`` (which starts it before uvicorn does, to report a store it can't
serve in one line) only call it, so that a server not behind ASGI can too."""

from __future__ import annotations

import asyncio

from ..engine import Engine
from .metrics import Metrics

__all__ = ["Lifetime"]


class Lifetime:
    """Starts and stops ``engine`` and ``metrics`` (if any) together."""

    def __init__(self, engine: Engine, metrics: Metrics | None = None) -> None:
        self.engine = engine
        self.metrics = metrics
        self._metrics_started = False

    async def start(self) -> None:
        """Start the engine (idempotent), then the metrics' work. Raises what
        the engine's start raises (StoreError, AgentStartError, ...)."""
        await self.engine.start()
        metrics = self.metrics
        if metrics is not None and not self._metrics_started:
            self._metrics_started = True
            metrics.start_sharing()
            if metrics.listener is not None:
                await metrics.listener.start()

    def begin_shutdown(self, *, graceful: bool = True) -> asyncio.Future[None]:
        """Start the shutdown without waiting for it: new messages are refused,
        running tasks get the shutdown grace to finish (unless not ``graceful``),
        then the rest fail and every open stream sends its task's final event and
        ends. Returns the shutdown's future, the one ``shutdown`` awaits; a later
        call returns it too, and one with ``graceful=False`` cuts the grace
        short. Call it on the app's event loop."""
        return self.engine.begin_shutdown(graceful=graceful)

    async def shutdown(self) -> None:
        """Stop in order: /metrics' own port, then the engine (gracefully), then
        the metrics' sharing, writing the last numbers."""
        metrics = self.metrics
        if metrics is not None and metrics.listener is not None:
            await metrics.listener.aclose()
        await self.engine.aclose(graceful=True)
        if metrics is not None:
            metrics.close()

    async def aclose(self) -> None:
        """Stop the agents at once, end the streams, close the store."""
        await self.engine.aclose()
