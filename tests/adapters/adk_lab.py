"""The lab's three agents as seed 004 builds them, for tests that put a2ad in
front of them (tests/adapters/test_fronting_adk.py): Google ADK agents on
LiteLLM, each served by ADK's own A2A server (``to_a2a``: the official a2a-sdk's
request handler underneath) on its own port.

``stock`` answers with its ``check_stock`` tool, ``pricing`` with ``get_price``
(189.00 EUR a unit, 10 % off from 10 units), and ``orchestrator`` asks both over
A2A: each is an ADK ``RemoteA2aAgent`` wrapped as a tool (``AgentTool``), whose
card is at the URL it is given (a2ad's ``/agents/stock/`` and
``/agents/pricing/``: the sub-agents fronted by a2ad too), called with an API key
when it is given one.

``AdkLab`` runs the three servers in a child process of their own (``python -m
tests.adapters.adk_lab CONFIG``), in one event loop, so that they live apart from
the test's process and from the a2ad in front of them: ``Front`` is that a2ad
(``a2ad serve --agent stock=a2a+http://...``, auth on, its SQLite file and port
fixed), which a test may kill and start again while the ADK agents keep their
tasks. Their models are ``HeldModel`` servers (tests/fake_model.py's FakeModel,
whose requests can also be held) in the test's process, one per agent, whose
turns a test scripts (``lab.script("stock", Turn(...), ...)``) and whose
requests it reads.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from a2ad.server import auth

from ..fake_model import FakeModel, Turn
from ..process_output import ProcessOutput
from ..served import PROJECT, Served
from ..threaded_server import free_port

__all__ = ["AGENTS", "AdkLab", "Front", "HeldModel", "Keys", "check_stock", "get_price"]

AGENTS = ("stock", "pricing", "orchestrator")
INVENTORY = {"CHAISE-ERGO": {"Lyon": 12, "Lille": 0}, "BUREAU-120": {"Lyon": 4, "Lille": 7}}
UNIT_PRICE = Decimal("189.00")


def check_stock(sku: str) -> dict[str, Any]:
    """Stock of an article, per warehouse."""
    per_site = INVENTORY.get(sku)
    if per_site is None:
        return {"status": "unknown", "sku": sku}
    return {"status": "ok", "sku": sku, "warehouses": per_site, "total": sum(per_site.values())}


def get_price(sku: str, quantity: int) -> dict[str, Any]:
    """Price of a quantity of an article before tax, with the volume discount."""
    if sku not in INVENTORY:
        return {"status": "unknown", "sku": sku}
    discount = 10 if quantity >= 10 else 0
    total = UNIT_PRICE * quantity * (100 - discount) / 100
    return {
        "status": "ok",
        "sku": sku,
        "quantity": quantity,
        "currency": "EUR",
        "unit_price": str(UNIT_PRICE),
        "discount_percent": discount,
        "total": str(total.quantize(Decimal("0.01"))),
    }


# --- the agents, in the child process (ADK is imported there only) ---


def _model(url: str) -> Any:
    from google.adk.models.lite_llm import LiteLlm

    return LiteLlm(model="openai/fake-model", api_base=url, api_key="x")


def stock_agent(model_url: str) -> Any:
    from google.adk.agents import Agent

    return Agent(
        name="stock_agent",
        model=_model(model_url),
        description="Answers stock questions about the catalogue's articles.",
        instruction="Answer stock questions with the check_stock tool.",
        tools=[check_stock],
    )


def pricing_agent(model_url: str) -> Any:
    from google.adk.agents import Agent

    return Agent(
        name="pricing_agent",
        model=_model(model_url),
        description="Prices the catalogue's articles, with the volume discount.",
        instruction="Answer price questions with the get_price tool.",
        tools=[get_price],
    )


def orchestrator_agent(
    model_url: str, stock_url: str, pricing_url: str, api_key: str | None = None
) -> Any:
    """Stock and pricing as its tools, each a call over A2A (RemoteA2aAgent) to the
    agent whose card is at the URL given, with ``api_key`` when given."""
    import httpx
    from google.adk.agents import Agent
    from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
    from google.adk.tools.agent_tool import AgentTool

    headers = {"X-API-Key": api_key} if api_key else {}

    def remote(name: str, url: str, description: str) -> AgentTool:
        card = url.rstrip("/") + "/.well-known/agent-card.json"
        http = httpx.AsyncClient(headers=headers, timeout=60)
        agent = RemoteA2aAgent(
            name=name, agent_card=card, description=description, httpx_client=http
        )
        return AgentTool(agent)

    return Agent(
        name="orchestrator",
        model=_model(model_url),
        description="Answers quotes, asking the stock and pricing agents.",
        instruction="Ask the stock agent and the pricing agent, then answer the quote.",
        tools=[
            remote("stock", stock_url, "Stock of an article, per warehouse."),
            remote("pricing", pricing_url, "Price of an article, with the volume discount."),
        ],
    )


async def _serve(config: dict[str, Any]) -> None:
    """The three agents under uvicorn, each on its port, in this one event loop."""
    import uvicorn
    from google.adk.a2a.utils.agent_to_a2a import to_a2a

    models, ports = config["models"], config["ports"]
    agents = {
        "stock": stock_agent(models["stock"]),
        "pricing": pricing_agent(models["pricing"]),
        "orchestrator": orchestrator_agent(
            models["orchestrator"],
            config["stock_url"],
            config["pricing_url"],
            os.environ.get("ADK_LAB_ORCHESTRATOR_KEY") or None,
        ),
    }
    servers = []
    for name, agent in agents.items():
        app = to_a2a(agent, host="127.0.0.1", port=ports[name])
        served = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=ports[name],
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
        )
        servers.append(uvicorn.Server(served))
    running = [asyncio.create_task(server.serve()) for server in servers]
    while not all(server.started for server in servers):
        if any(task.done() for task in running):
            await asyncio.gather(*running)
            raise SystemExit("an ADK server did not start")
        await asyncio.sleep(0.01)
    print("adk lab ready", flush=True)
    # LiteLLM, which ADK imports on an agent's first model call, takes seconds to
    # import: now, while the test starts a2ad, rather than in the first test.
    await asyncio.to_thread(importlib.import_module, "litellm")
    await asyncio.gather(*running)


# --- in the test's process ---


class HeldModel(FakeModel):
    """A FakeModel whose requests can be held: after ``hold()``, each request waits
    (``waiting`` counts them) until ``release()``, or until its client hangs up,
    which ``disconnects`` records: a model call the agent dropped (its run
    canceled) while the model was still thinking."""

    def __init__(self, turns: list[Turn] | None = None) -> None:
        super().__init__(turns)
        self._open = threading.Event()
        self._open.set()
        self.waiting = 0

    def hold(self) -> None:
        self._open.clear()

    def release(self, timeout: float = 10) -> None:
        """Let held requests go on (to the turns scripted now), and wait until none
        waits any more."""
        self._open.set()
        deadline = time.monotonic() + timeout
        while self.waiting and time.monotonic() < deadline:
            time.sleep(0.01)

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self._open.is_set():
            await super()._app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        with self._lock:
            self.waiting += 1
        try:
            hung_up = asyncio.ensure_future(receive())  # the next message: the disconnect
            while not self._open.is_set():
                if hung_up.done():
                    with self._lock:
                        self.requests.append(json.loads(body or b"{}"))
                        self.disconnects.append(time.monotonic())
                    return
                await asyncio.sleep(0.01)
            hung_up.cancel()
            replayed = [{"type": "http.request", "body": body, "more_body": False}]

            async def again() -> dict[str, Any]:
                return replayed.pop(0) if replayed else await receive()

            await super()._app(scope, again, send)
        finally:
            with self._lock:
                self.waiting -= 1


class AdkLab(ProcessOutput):
    """The three ADK servers in a child process (``urls``, by agent), their models
    here (``models``). ``front`` is the base URL of the a2ad that fronts the
    sub-agents for the orchestrator (``FRONT/agents/stock/``,
    ``FRONT/agents/pricing/``), which may start after the lab; ``key`` the
    orchestrator's API key for it."""

    expect_timeout = 60.0  # ADK and LiteLLM import slowly on a loaded 2-core machine

    def __init__(self, front: str, key: str | None = None) -> None:
        self.models = {name: HeldModel([Turn(text="?")]) for name in AGENTS}
        self.ports = {name: free_port() for name in AGENTS}
        self.urls = {name: f"http://127.0.0.1:{port}" for name, port in self.ports.items()}
        self.front = front.rstrip("/")
        self.key = key

    def script(self, agent: str, *turns: Turn) -> HeldModel:
        """``agent``'s model answers its next requests with ``turns`` (then says no
        more turns were scripted); the model, to read its requests."""
        model = self.models[agent]
        model.turns = [*turns, Turn(text=f"({agent}: no more turns scripted)")]
        return model

    def agent_args(self) -> list[str]:
        """``a2ad serve``'s arguments that front the three (ADK's card is at the root)."""
        args = []
        for name, url in self.urls.items():
            args += ["--agent", f"{name}=a2a+{url}/"]
        return args

    def __enter__(self) -> AdkLab:
        for model in self.models.values():
            model.__enter__()
        config = {
            "models": {name: model.url for name, model in self.models.items()},
            "ports": self.ports,
            "stock_url": f"{self.front}/agents/stock/",
            "pricing_url": f"{self.front}/agents/pricing/",
        }
        env = {
            **os.environ,
            # LiteLLM fetches its model price list from the network unless told not to.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONWARNINGS": "ignore",  # ADK's "experimental" warnings, one per class
            "ADK_LAB_ORCHESTRATOR_KEY": self.key or "",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.adapters.adk_lab", json.dumps(config)],
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.watch(proc)
        try:
            self.expect("adk lab ready")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        for model in self.models.values():
            model.release()
            model.__exit__(None, None, None)


@dataclass
class Keys:
    """An a2ad keys file and its keys, by principal."""

    path: Path
    carla: str  # the lab's user, tenant "lab"
    olivier: str  # an operator of "lab"
    orchestrator: str  # the ADK orchestrator's own, to call stock and pricing (tenant "lab-agents")
    ann: str  # tenant "team-a"
    bob: str  # tenant "team-b"
    olga: str  # an operator of "team-a" and "team-b"

    @classmethod
    def make(cls, path: Path) -> Keys:
        def key(principal: str, *tenants: str, operator: bool = False) -> str:
            roles = ("operator",) if operator else ()
            return auth.add_key(str(path), principal, tenants=tenants, roles=roles)

        return cls(
            path=path,
            carla=key("carla", "lab"),
            olivier=key("olivier", "lab", operator=True),
            orchestrator=key("orchestrator", "lab-agents"),
            ann=key("ann", "team-a"),
            bob=key("bob", "team-b"),
            olga=key("olga", "team-a", "team-b", operator=True),
        )


class Front:
    """``a2ad serve`` in front of the lab's three agents, auth on (``keys``), on
    ``port`` with its SQLite file in ``folder``: the same each time it is started
    again (``restart``), so that the orchestrator's URLs stay right and a2ad
    finds its tasks."""

    def __init__(self, lab: AdkLab, keys: Keys, folder: Path, port: int) -> None:
        self.lab, self.keys, self.folder, self.port = lab, keys, folder, port
        self.url = f"http://127.0.0.1:{port}"
        self.served = self._start()

    def _start(self) -> Served:
        store = f"sqlite:///{self.folder}/a2ad.db"
        args = (*self.lab.agent_args(), "--auth", str(self.keys.path), "--store", store)
        served = Served(*args, port=self.port)
        try:
            assert served.url == self.url  # the banner: a2ad listens
        except BaseException:
            served.__exit__(None, None, None)
            raise
        return served

    def agent_url(self, agent: str) -> str:
        return f"{self.url}/agents/{agent}/"

    def restart(self, *, kill: bool = True) -> None:
        """Stop a2ad (SIGKILL, or with ``kill=False`` Ctrl-C's SIGINT) and serve
        again, on the same port and file."""
        if kill:
            self.served.proc.kill()
        else:
            self.served.stop()
        self.served.__exit__(None, None, None)
        self.served = self._start()

    def close(self) -> None:
        self.served.__exit__(None, None, None)


if __name__ == "__main__":
    asyncio.run(_serve(json.loads(sys.argv[1])))
