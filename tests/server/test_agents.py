"""Several agents on one server: each at /agents/<name>/ with its own card and
its own tasks, the default one at / too, one store for all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import Agent, SqliteStore, TaskContext, create_app
from a2ad.engine.config import EngineConfig
from a2ad.server.app import A2AApp

from ..conftest import V1, msg10
from ..jsonrpc import rpc_body


class Named(Agent):
    """Answers with its own name, so a test sees which agent ran."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"The {name} agent."

    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(f"{self.name}: {ctx.text}", name="answer")


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[A2AApp]:
    agents = {"stock": Named("stock"), "pricing": Named("pricing")}
    served = create_app(
        agents, store=SqliteStore(tmp_path / "tasks.db"), engine=EngineConfig(shutdown_grace=0)
    )
    await served.engine.start()
    yield served
    await served.aclose()


@pytest.fixture
async def http(app: A2AApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c


async def send(http: httpx.AsyncClient, path: str, text: str) -> dict[str, Any]:
    r = await http.post(path, json=rpc_body("SendMessage", msg10(text)), headers=V1)
    return r.json()["result"]["task"]  # type: ignore[no-any-return]


def answer(task: dict[str, Any]) -> str:
    return task["artifacts"][0]["parts"][0]["text"]  # type: ignore[no-any-return]


async def test_each_agent_answers_beneath_its_name_and_the_first_at_the_root(
    http: httpx.AsyncClient,
) -> None:
    assert answer(await send(http, "/agents/stock/", "hi")) == "stock: hi"
    assert answer(await send(http, "/agents/pricing/a2a", "hi")) == "pricing: hi"
    assert answer(await send(http, "/", "hi")) == "stock: hi"
    rest = await http.post("/agents/pricing/message:send", json=msg10("hi"), headers=V1)
    assert answer(rest.json()["task"]) == "pricing: hi"


async def test_each_agent_has_its_own_card_naming_its_own_url(http: httpx.AsyncClient) -> None:
    for name in ("stock", "pricing"):
        card = (await http.get(f"/agents/{name}/.well-known/agent-card.json", headers=V1)).json()
        assert card["name"] == name
        urls = {i["url"] for i in card["supportedInterfaces"]}
        assert urls == {f"http://a2ad.test/agents/{name}/"}
    root = (await http.get("/.well-known/agent-card.json", headers=V1)).json()
    assert root["name"] == "stock"
    assert {i["url"] for i in root["supportedInterfaces"]} == {"http://a2ad.test/"}


async def test_a_task_of_one_agent_is_never_visible_as_anothers(
    http: httpx.AsyncClient, app: A2AApp
) -> None:
    task = await send(http, "/agents/pricing/", "quote")
    missing = (
        await http.post("/agents/stock/", json=rpc_body("GetTask", {"id": "x"}), headers=V1)
    ).json()
    theirs = (
        await http.post("/agents/stock/", json=rpc_body("GetTask", {"id": task["id"]}), headers=V1)
    ).json()
    assert theirs["error"]["code"] == missing["error"]["code"] == -32001
    assert theirs["error"]["message"] == missing["error"]["message"].replace("x", task["id"], 1)
    for path in ("/agents/stock/tasks", "/tasks"):  # the root is the stock agent's
        listed = (await http.get(path, headers=V1)).json()
        assert task["id"] not in {t["id"] for t in listed["tasks"]}
    listed = (await http.get("/agents/pricing/tasks", headers=V1)).json()
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    canceled = await http.post(f"/agents/stock/tasks/{task['id']}:cancel", headers=V1)
    assert canceled.status_code == 404
    stored = await app.store.get(task["id"])
    assert stored is not None and stored.agent == "pricing"


async def test_an_unknown_agent_is_404_naming_the_agents_there(http: httpx.AsyncClient) -> None:
    r = await http.post("/agents/billing/", json=rpc_body("GetTask", {"id": "x"}), headers=V1)
    assert r.status_code == 404
    message = r.json()["error"]["message"]
    assert "'billing'" in message and "stock, pricing" in message


def test_default_agent_chooses_which_one_answers_at_the_root() -> None:
    agents = {"stock": Named("stock"), "pricing": Named("pricing")}
    app = create_app(agents, default_agent="pricing")
    assert app.engine.default_agent == "pricing"
    with pytest.raises(ValueError, match="'billing' is not one of stock, pricing"):
        create_app(agents, default_agent="billing")
    with pytest.raises(ValueError, match="path segment"):
        create_app({"no/slash": Named("x")})
