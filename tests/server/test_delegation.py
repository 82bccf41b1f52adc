"""Delegation tokens: an agent's turn calls its own server as its task's owner.

A real keys file; the app is called in-process (ASGITransport), the token
taken from the turn as an agent would take it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, ApiKeys, Caller, CredentialAuthenticator, create_app
from a2ad.agent import TaskContext, Via
from a2ad.engine.delegation import Delegations
from a2ad.server import auth

from ..conftest import V1, msg10
from ..jsonrpc import rpc_body


class Delegating(Agent):
    """Keeps the delegation token of each turn, the callers it saw, and what
    the token gives once the turn is over."""

    name = "delegating"

    def __init__(self) -> None:
        self.tokens: list[str | None] = []
        self.callers: list[Caller] = []
        self.contexts: list[TaskContext] = []

    async def run(self, ctx: TaskContext) -> None:
        self.tokens.append(ctx.delegation_token())
        self.callers.append(ctx.request.caller)
        self.contexts.append(ctx)
        await ctx.artifact("ok")


@pytest.fixture
def agent() -> Delegating:
    return Delegating()


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.toml"


@pytest.fixture
def alice(keys_file: Path) -> str:
    return auth.add_key(str(keys_file), "alice", tenants=["t1", "t2"], roles=["operator"])


def app_with_keys(agent: Agent, keys_file: Path) -> A2AApp:
    keys = ApiKeys.load(str(keys_file))
    return create_app(agent, authenticator=CredentialAuthenticator(keys=keys))


@pytest.fixture
async def http(agent: Delegating, keys_file: Path, alice: str) -> AsyncIterator[httpx.AsyncClient]:
    app = app_with_keys(agent, keys_file)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


async def call(
    http: httpx.AsyncClient, token: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    body = rpc_body(method, params)
    r = await http.post("/", json=body, headers={**V1, "Authorization": f"Bearer {token}"})
    return r.json()  # type: ignore[no-any-return]


async def delegated_token(http: httpx.AsyncClient, agent: Delegating, alice: str) -> str:
    """The token of a turn alice started in her tenant t2; the task's id after it."""
    sent = await call(http, alice, "SendMessage", {**msg10("first"), "tenant": "t2"})
    assert "result" in sent, sent
    token = agent.tokens[-1]
    assert token is not None and token.startswith("a2ad-delegation.")
    return token


async def test_a_turns_token_proves_its_owner_in_its_tenant_without_roles(
    http: httpx.AsyncClient, agent: Delegating, alice: str
) -> None:
    token = await delegated_token(http, agent, alice)
    first_task = agent.contexts[0].task_id
    sent = await call(http, token, "SendMessage", msg10("second"))
    task = sent["result"]["task"]
    assert agent.callers[-1] == Caller(
        principal="alice",
        tenants=("t2",),
        authenticated=True,
        via=Via(task_id=first_task, agent=""),
    )
    assert task["history"][0]["metadata"] == {"a2ad": {"via": {"taskId": first_task, "agent": ""}}}
    # The sub-task is alice's, in t2: her own key reads it there.
    got = await call(http, alice, "GetTask", {"id": task["id"], "tenant": "t2"})
    assert got["result"]["id"] == task["id"]
    refused = await call(http, token, "ListTasks", {"tenant": "t1"})
    assert refused["error"]["data"][0]["reason"] == "PERMISSION_DENIED", refused


async def test_a_via_sent_by_an_ordinary_caller_is_taken_out(
    http: httpx.AsyncClient, alice: str
) -> None:
    forged = {"a2ad": {"via": {"taskId": "t-of-someone"}, "other": 1}, "mine": True}
    sent = await call(http, alice, "SendMessage", msg10("hi", metadata=forged))
    metadata = sent["result"]["task"]["history"][0]["metadata"]
    assert metadata == {"a2ad": {"other": 1}, "mine": True}


async def test_a_token_of_another_server_expired_or_altered_is_401(
    http: httpx.AsyncClient, agent: Delegating, alice: str, keys_file: Path
) -> None:
    token = await delegated_token(http, agent, alice)
    other = Delegations(bytes(32)).issue(tenant="t2", principal="alice", task_id="x", agent="")
    expired = Delegations(bytes(32), lifetime=-60)
    payload, _, mac = token.partition(".")[2].partition(".")
    altered = f"a2ad-delegation.{payload[:-2]}AA.{mac}"
    for bad in (other, altered, token + "x", "a2ad-delegation.", "a2ad-delegation.a.b"):
        r = await http.post("/", json={}, headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401, (bad, r.text)
        assert "delegation token is not valid" in r.json()["error"]["message"]
        assert bad not in r.text
    app = create_app(Delegating(), secret_key=bytes(32), authenticator=_keys(keys_file))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        old = expired.issue(tenant="", principal="alice", task_id="x", agent="")
        r = await c.post("/", json={}, headers={"Authorization": f"Bearer {old}"})
        assert r.status_code == 401
        fresh = Delegations(bytes(32)).issue(tenant="", principal="a", task_id="x", agent="")
        assert (await call(c, fresh, "ListTasks", {}))["result"]["tasks"] == []
    await app.aclose()


def _keys(keys_file: Path) -> CredentialAuthenticator:
    return CredentialAuthenticator(keys=ApiKeys.load(str(keys_file)))


async def test_no_token_once_the_turn_is_over_nor_without_auth(
    http: httpx.AsyncClient, agent: Delegating, alice: str
) -> None:
    await delegated_token(http, agent, alice)
    assert agent.contexts[-1].delegation_token() is None
    plain = Delegating()
    app = create_app(plain)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        r = await c.post("/", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                    "params": msg10("hi")}, headers=V1)  # fmt: skip
        assert "result" in r.json()
    await app.aclose()
    assert plain.tokens == [None]
