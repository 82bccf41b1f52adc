"""``ctx.tenant``: an agent knows the tenant its task belongs to (the one the
request named, else the caller's default), through the wire with real keys."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx

from a2ad import Agent, ApiKeys, CredentialAuthenticator, create_app
from a2ad.agent import TaskContext
from a2ad.server import auth

from ..jsonrpc import rpc_body


class SaysTenant(Agent):
    name = "says-tenant"

    async def run(self, ctx: TaskContext) -> None:
        await ctx.complete(f"tenant={ctx.tenant}")


def _send(tenant: str = "") -> dict[str, Any]:
    params: dict[str, Any] = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    }
    if tenant:
        params["tenant"] = tenant
    return rpc_body("SendMessage", params)


async def test_the_agent_sees_its_tasks_tenant(tmp_path: Path) -> None:
    path = str(tmp_path / "keys.toml")
    key = auth.add_key(path, "olga", tenants=["acme", "globex"])
    app = create_app(SaysTenant(), authenticator=CredentialAuthenticator(keys=ApiKeys.load(path)))
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {key}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        said = {}
        for tenant in ("", "globex"):
            answer = (await http.post("/", json=_send(tenant), headers=headers)).json()
            said[tenant] = answer["result"]["task"]["status"]["message"]["parts"][0]["text"]
    await app.aclose()
    assert said == {"": "tenant=acme", "globex": "tenant=globex"}


async def test_without_auth_the_tenant_is_empty() -> None:
    app = create_app(SaysTenant())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        answer = (await http.post("/", json=_send(), headers={"A2A-Version": "1.0"})).json()
    await app.aclose()
    assert answer["result"]["task"]["status"]["message"]["parts"][0]["text"] == "tenant="
