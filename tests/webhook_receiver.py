"""A real webhook receiver for the push-notification tests: uvicorn on a free
loopback port, in a thread of its own, recording every POST.

Each path is a webhook of its own (``receiver.url("a")`` is ``…/hook/a``), and
``receiver.rule("a", ...)`` says how that path answers: ``fail_first`` requests
answered ``fail_status`` before it accepts, every request answered ``status``,
or each request held until ``release("a")``. Requests are recorded as they
arrive, before they are answered.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from .threaded_server import ThreadedServer

__all__ = ["Received", "Receiver"]


@dataclass(frozen=True)
class Received:
    name: str  # the webhook: the path after /hook/
    headers: dict[str, str]  # lowercase names
    body: Any  # the JSON
    status: int  # what it was answered (0 if it was not answered, e.g. cut short)

    @property
    def seq(self) -> int:
        return int(self.headers["x-a2ad-event-id"])


@dataclass
class _Rule:
    fail_first: int = 0
    fail_status: int = 503
    status: int = 200
    hold: threading.Event = field(default_factory=threading.Event)  # set: don't hold
    seen: int = 0

    def __post_init__(self) -> None:
        self.hold.set()


class Receiver:
    def __init__(self) -> None:
        self._served = ThreadedServer(self._app, what="the webhook receiver", interface="asgi3")
        self.port = self._served.port
        self.base = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._rules: dict[str, _Rule] = {}

    def __enter__(self) -> Receiver:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for rule in self._rules.values():
            rule.hold.set()
        self._served.stop()

    def url(self, name: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/hook/{name}"

    def rule(
        self,
        name: str,
        *,
        fail_first: int = 0,
        fail_status: int = 503,
        status: int = 200,
        hold: bool = False,
    ) -> None:
        rule = _Rule(fail_first=fail_first, fail_status=fail_status, status=status)
        if hold:
            rule.hold.clear()
        with self._lock:
            self._rules[name] = rule

    def release(self, name: str) -> None:
        """Answer the held requests of ``name``, and hold no more."""
        self._rules[name].hold.set()

    def received(self, name: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self._received if name is None or r.name == name]

    def accepted(self, name: str) -> list[Received]:
        """The requests of ``name`` answered 2xx, in the order they arrived."""
        return [r for r in self.received(name) if 200 <= r.status < 300]

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        name = scope["path"].removeprefix("/hook/")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        with self._lock:
            rule = self._rules.setdefault(name, _Rule())
            rule.seen += 1
            status = rule.fail_status if rule.seen <= rule.fail_first else rule.status
            index = len(self._received)
            body = json.loads(b"".join(chunks))
            self._received.append(Received(name, headers, body, 0))
        if not rule.hold.is_set():
            await asyncio.get_running_loop().run_in_executor(None, rule.hold.wait)
        with self._lock:
            self._received[index] = Received(name, headers, body, status)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})
