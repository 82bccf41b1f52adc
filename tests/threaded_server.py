"""An ASGI app under a real uvicorn on a free loopback port, in a thread with its
own event loop: the a2ad servers, webhook receivers and JWKS issuers tests run."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

__all__ = ["ThreadedServer", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThreadedServer:
    """``app`` served on 127.0.0.1:``port``; ``what`` names it in a failure to start.
    Other ``config`` goes to uvicorn.Config (``lifespan`` is off unless given)."""

    def __init__(self, app: Any, *, what: str, **config: Any) -> None:
        self.port = free_port()
        self.what = what
        config.setdefault("lifespan", "off")
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", **config)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.what} did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
