"""``GET /healthz`` and ``GET /readyz``: what load balancers and Kubernetes probes ask.

``/healthz`` answers 200 while the process serves HTTP at all (liveness).
``/readyz`` answers 200 only when the server should be given requests: its
store answers a trivial read within ``READY_TIMEOUT`` seconds and it is not
shutting down; else 503, saying which. Both are public (no credential, no rate
limit: a probe must not be refused) and say nothing about tasks or callers.

A front (``a2ad serve --no-run``) adds its agents' live workers to ``/readyz``
(``"workers": {"<agent>": n}``) and, while an agent has none, a ``"warning"``
saying what to run. It still answers 200: the front takes, stores and serves
tasks without workers (they run once one connects), and a 503 would take every
front out of its load balancer while the workers restart, failing the reads of
tasks as well.
"""

from __future__ import annotations

import asyncio
import logging

import msgspec

from ..engine import Engine
from .types import Scope, Send, respond

__all__ = ["HEALTH_PATHS", "READY_TIMEOUT", "HealthEndpoint"]

log = logging.getLogger("a2ad.server")

HEALTH_PATHS = ("/healthz", "/readyz")
READY_TIMEOUT = 2.0  # seconds the store gets to answer /readyz's read


class HealthEndpoint:
    def __init__(self, engine: Engine, *, ready_timeout: float = READY_TIMEOUT) -> None:
        self.engine = engine
        self.ready_timeout = ready_timeout

    async def __call__(self, path: str, scope: Scope, send: Send) -> None:
        headers = [(b"cache-control", b"no-store")]
        if scope["method"] not in ("GET", "HEAD"):
            body = msgspec.json.encode(
                {"status": "error", "reason": f"{scope['method']} {path}: use GET"}
            )
            await respond(send, 405, body, headers=[*headers, (b"allow", b"GET, HEAD")])
            return
        if path == "/healthz":
            await respond(send, 200, b'{"status":"ok"}', headers=headers)
            return
        reason = await self.unready()
        if reason:
            body = msgspec.json.encode({"status": "unready", "reason": reason})
            await respond(send, 503, body, headers=headers)
        else:
            await respond(send, 200, msgspec.json.encode(self.ready()), headers=headers)

    def ready(self) -> dict[str, object]:
        """The body of a 200 ``/readyz``: a front's workers, as last read."""
        presence = self.engine.presence
        if presence is None:
            return {"status": "ready"}
        warning = presence.problem()
        workers = {"workers": dict(presence.alive)}
        return {"status": "ready", **workers, **({"warning": warning} if warning else {})}

    async def unready(self) -> str:
        """Why the server should get no requests now, or "" if it should."""
        if self.engine.closing:
            return "the server is shutting down"
        try:
            await asyncio.wait_for(self.engine.store.ping(), self.ready_timeout)
        except TimeoutError:
            return f"the task store did not answer within {self.ready_timeout:g} s"
        except Exception as exc:  # any failure to answer is "not ready", never a 500
            log.warning("readiness check: the task store failed: %s", exc)
            return f"the task store failed: {str(exc)[:300]}"
        return ""
