"""The token usage report at the wire, with real API keys: ``a2ad/GetUsage``
over JSON-RPC and ``GET /a2ad/usage``, for operators only."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import Agent, ApiKeys, CredentialAuthenticator, create_app
from a2ad.agent import TaskContext
from a2ad.server import auth

from ..conftest import msg10
from ..jsonrpc import call, rpc_body

V1 = {"A2A-Version": "1.0"}


class Spender(Agent):
    name = "spender"

    async def run(self, ctx: TaskContext) -> None:
        await ctx.usage(prompt_tokens=100, completion_tokens=20, model="m1")
        await ctx.complete("done")


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, str]:
    path = str(tmp_path / "keys.toml")
    return {
        "olga": auth.add_key(path, "olga", tenants=["acme", "globex"], roles=["operator"]),
        "ann": auth.add_key(path, "ann", tenants=["acme"]),
        "gus": auth.add_key(path, "gus", tenants=["globex"]),
        "path": path,
    }


@pytest.fixture
async def http(keys: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(keys["path"]))
    app = create_app(Spender(), authenticator=authenticator)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def rpc(http: httpx.AsyncClient, key: str, method: str, params: Any) -> dict[str, Any]:
    return await call(http, method, params, headers={**V1, **bearer(key)})


async def spend(http: httpx.AsyncClient, keys: dict[str, str]) -> None:
    for who in ("ann", "ann", "gus"):
        params = msg10("go")
        params["message"]["messageId"] = str(uuid.uuid4())
        sent = await rpc(http, keys[who], "SendMessage", params)
        assert sent["result"]["task"]["metadata"]["a2ad"]["usage"]["totalTokens"] == 120


async def test_an_operator_reads_its_tenants_totals_over_jsonrpc(
    http: httpx.AsyncClient, keys: dict[str, str]
) -> None:
    await spend(http, keys)
    got = await rpc(http, keys["olga"], "a2ad/GetUsage", {"groupBy": ["tenant", "principal"]})
    report = got["result"]
    assert report["tenants"] == ["acme", "globex"] and report["groupBy"] == ["tenant", "principal"]
    assert report["rows"] == [
        {
            "tenant": "acme",
            "principal": "ann",
            "promptTokens": 200,
            "completionTokens": 40,
            "totalTokens": 240,
        },
        {
            "tenant": "globex",
            "principal": "gus",
            "promptTokens": 100,
            "completionTokens": 20,
            "totalTokens": 120,
        },
    ]
    assert report["total"] == {"promptTokens": 300, "completionTokens": 60, "totalTokens": 360}
    assert report["from"] <= report["to"]


async def test_an_operator_reads_one_tenant_over_http(
    http: httpx.AsyncClient, keys: dict[str, str]
) -> None:
    await spend(http, keys)
    r = await http.get(
        "/a2ad/usage", params={"tenant": "globex", "groupBy": "model"}, headers=bearer(keys["olga"])
    )
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == [
        {"model": "m1", "promptTokens": 100, "completionTokens": 20, "totalTokens": 120}
    ]


async def test_a_caller_without_the_operator_role_is_refused(
    http: httpx.AsyncClient, keys: dict[str, str]
) -> None:
    await spend(http, keys)
    got = await rpc(http, keys["ann"], "a2ad/GetUsage", {})
    error = got["error"]
    assert error["code"] == -32600 and "operators only" in error["message"]
    assert error["data"][0]["reason"] == "PERMISSION_DENIED"
    r = await http.get("/a2ad/usage", headers=bearer(keys["ann"]))
    assert r.status_code == 403
    assert r.json()["error"]["details"][0]["reason"] == "PERMISSION_DENIED"
    r = await http.get("/a2ad/usage")
    assert r.status_code == 401


async def test_an_operator_is_refused_a_tenant_not_its_own(
    http: httpx.AsyncClient, keys: dict[str, str]
) -> None:
    got = await rpc(http, keys["olga"], "a2ad/GetUsage", {"tenant": "initech"})
    assert got["error"]["data"][0]["reason"] == "PERMISSION_DENIED"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"groupBy": ["team"]}, "groupBy"),
        ({"groupBy": ["agent", "agent"]}, "groupBy"),
        ({"agent": ["stock"]}, "agent"),
        ({"groupBy": "day"}, "groupBy"),
        ({"colour": "red"}, None),
    ],
)
async def test_bad_params_are_invalid_params(
    http: httpx.AsyncClient, keys: dict[str, str], params: dict[str, Any], field: str | None
) -> None:
    got = await rpc(http, keys["olga"], "a2ad/GetUsage", params)
    error = got["error"]
    assert error["code"] == -32602, error
    if field is not None:
        assert error["data"][1]["fieldViolations"][0]["field"] == field


async def test_a_bad_query_parameter_is_a_400_naming_it(
    http: httpx.AsyncClient, keys: dict[str, str]
) -> None:
    r = await http.get("/a2ad/usage?to=2026-13-01", headers=bearer(keys["olga"]))
    assert r.status_code == 400
    assert r.json()["error"]["details"][1]["fieldViolations"][0]["field"] == "to"
    r = await http.get("/a2ad/usage?since=2026-01-01", headers=bearer(keys["olga"]))
    assert r.status_code == 400 and "since" in r.text
    r = await http.post("/a2ad/usage", headers=bearer(keys["olga"]))
    assert r.status_code == 405 and r.headers["allow"] == "GET"


async def test_without_auth_any_caller_reads_every_tenant() -> None:
    app = create_app(Spender())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        for tenant in ("acme", "globex"):
            params = {**msg10("go"), "tenant": tenant}
            r = await http.post(
                "/",
                json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params},
                headers=V1,
            )
            assert "result" in r.json(), r.text
        r = await http.get("/a2ad/usage?groupBy=tenant")
    await app.aclose()
    assert r.status_code == 200, r.text
    assert r.json()["tenants"] is None
    assert [row["tenant"] for row in r.json()["rows"]] == ["acme", "globex"]


class Named(Agent):
    """A Spender served under a name of its own."""

    def __init__(self, name: str, prompt_tokens: int) -> None:
        self.name = name
        self.prompt_tokens = prompt_tokens

    async def run(self, ctx: TaskContext) -> None:
        await ctx.usage(prompt_tokens=self.prompt_tokens, completion_tokens=1, model="m1")
        await ctx.complete("done")


async def test_a_server_of_two_named_agents_totals_each_agents_usage() -> None:
    app = create_app({"stock": Named("stock", 100), "pricing": Named("pricing", 10)})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        for path in ("/agents/stock/", "/agents/pricing/", "/agents/pricing/", "/"):
            params = msg10("go")
            params["message"]["messageId"] = str(uuid.uuid4())
            r = await http.post(path, json=rpc_body("SendMessage", params), headers=V1)
            assert r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        by_agent = await call(http, "a2ad/GetUsage", {"groupBy": ["agent"]}, headers=V1)
        stock = await http.get("/a2ad/usage?agent=stock&groupBy=tenant,agent")
        unnamed = await call(http, "a2ad/GetUsage", {"agent": ""}, headers=V1)
        wrong = await call(http, "a2ad/GetUsage", {"agent": 7}, headers=V1)
    await app.aclose()
    report = by_agent["result"]
    assert report["groupBy"] == ["agent"] and report["agent"] is None
    assert report["rows"] == [
        {"agent": "pricing", "promptTokens": 20, "completionTokens": 2, "totalTokens": 22},
        {"agent": "stock", "promptTokens": 200, "completionTokens": 2, "totalTokens": 202},
    ]
    assert report["total"] == {"promptTokens": 220, "completionTokens": 4, "totalTokens": 224}
    assert stock.status_code == 200, stock.text
    assert stock.json()["agent"] == "stock"
    assert stock.json()["rows"] == [
        {
            "tenant": "",
            "agent": "stock",
            "promptTokens": 200,
            "completionTokens": 2,
            "totalTokens": 202,
        }
    ]
    # No task here is the unnamed agent's: the root is the first agent's.
    assert unnamed["result"]["rows"] == [] and unnamed["result"]["agent"] == ""
    assert wrong["error"]["code"] == -32602
    assert wrong["error"]["data"][1]["fieldViolations"][0]["field"] == "agent"
