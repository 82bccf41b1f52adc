"""PraisonAI agents written as PraisonAI's docs write them, pointed at the fake model,
for the praisonai adapter's tests. ``agent`` (module level) reads the model's URL from
``OPENAI_BASE_URL``. Probes record what a tool went through for tests on another thread."""

from __future__ import annotations

import os
import threading

from praisonaiagents import Agent

from ..fake_model import MODEL


class Probe:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.release = threading.Event()

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


SLOW = Probe()


def check_stock(sku: str) -> str:
    """Units in stock of a reference."""
    return f"{sku}: 12 in Lyon"


def slow_lookup(sku: str) -> str:
    """Looks a reference up in a slow catalogue."""
    SLOW.started.set()
    SLOW.release.wait(30)
    SLOW.stopped.set()
    return f"{sku} found"


def broken(sku: str) -> str:
    """Looks a reference up, and fails."""
    raise KeyError("secret detail")


def build(base_url: str) -> Agent:
    return Agent(
        name="stock",
        role="Stock clerk",
        instructions="You answer questions about stock.",
        model=MODEL,
        base_url=base_url,
        api_key="test-key",
        tools=[check_stock, slow_lookup, broken],
        retry=False,
    )


agent = build(os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"))
