"""Principals of different issuers are different: with API keys and JWTs both
on, the key of ``alice`` and a JWT whose subject is ``alice`` never reach each
other's tasks, by any operation, unless the operator maps JWT subjects onto
key names (``principal_prefix=""``).

The keys are made by ``add_key`` into a real keys file; the JWTs are signed by
the test's own keys and checked against a JWKS served on a real port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, ApiKeys, CredentialAuthenticator, JwtVerifier, create_app
from a2ad.agent import TaskContext
from a2ad.server import auth

from ..conftest import V1, msg10
from ..jsonrpc import rpc_body
from ..jwks_server import AUDIENCE, ISSUER, Issuer

HOOK = "https://93.184.215.14/hook"  # public: no DNS needed to accept it
NOT_FOUND = -32001


class Asks(Agent):
    """Reports some tokens, then asks for more input: its tasks stay in flight."""

    name = "asks"

    async def run(self, ctx: TaskContext) -> None:
        await ctx.usage(prompt_tokens=3, completion_tokens=4, model="m")
        await ctx.require_input("and then?")


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with Issuer() as idp:
        idp.add_key("k1")
        idp.publish("k1")
        yield idp


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.toml"


@pytest.fixture
def credentials(keys_file: Path, issuer: Issuer) -> dict[str, str]:
    return {
        "key": auth.add_key(str(keys_file), "alice"),
        "jwt": issuer.token("k1", sub="alice"),
        "operator": auth.add_key(str(keys_file), "ops", roles=["operator"]),
    }


def make_app(keys_file: Path, issuer: Issuer, **jwt_options: Any) -> A2AApp:
    verifier = JwtVerifier(issuer.url, issuer=ISSUER, audience=AUDIENCE, **jwt_options)
    keys = ApiKeys.load(str(keys_file))
    return create_app(Asks(), authenticator=CredentialAuthenticator(keys=keys, jwt=verifier))


class Caller:
    """JSON-RPC 1.0 calls with one credential."""

    def __init__(self, http: httpx.AsyncClient, token: str) -> None:
        self.http = http
        self.headers = {**V1, "Authorization": f"Bearer {token}"}

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = rpc_body(method, params)
        r = await self.http.post("/", json=body, headers=self.headers)
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

    async def result(self, method: str, params: dict[str, Any]) -> Any:
        answer = await self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def not_found(self, method: str, params: dict[str, Any]) -> None:
        answer = await self.call(method, params)
        assert answer.get("error", {}).get("code") == NOT_FOUND, (method, answer)


@pytest.fixture
async def http(
    keys_file: Path, issuer: Issuer, credentials: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    app = make_app(keys_file, issuer)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


@pytest.mark.parametrize(("owner", "other"), [("key", "jwt"), ("jwt", "key")])
async def test_a_key_and_a_jwt_of_one_name_never_reach_each_others_tasks(
    http: httpx.AsyncClient, credentials: dict[str, str], owner: str, other: str
) -> None:
    mine, theirs = Caller(http, credentials[owner]), Caller(http, credentials[other])
    task = (await mine.result("SendMessage", msg10("hi")))["task"]
    task_id = task["id"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    config = await mine.result(
        "CreateTaskPushNotificationConfig", {"taskId": task_id, "id": "c1", "url": HOOK}
    )
    assert config["id"] == "c1"

    by_id = {"id": task_id}
    config_id = {"taskId": task_id, "id": "c1"}
    await theirs.not_found("GetTask", by_id)
    assert (await theirs.result("ListTasks", {}))["tasks"] == []
    await theirs.not_found("SendMessage", msg10("more", taskId=task_id))
    await theirs.not_found("SubscribeToTask", by_id)
    await theirs.not_found(
        "CreateTaskPushNotificationConfig", {"taskId": task_id, "id": "c2", "url": HOOK}
    )
    await theirs.not_found("GetTaskPushNotificationConfig", config_id)
    await theirs.not_found("ListTaskPushNotificationConfigs", {"taskId": task_id})
    await theirs.not_found("DeleteTaskPushNotificationConfig", config_id)
    await theirs.not_found("CancelTask", by_id)

    # The owner still has all of it, untouched.
    assert (await mine.result("GetTask", by_id))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert [t["id"] for t in (await mine.result("ListTasks", {}))["tasks"]] == [task_id]
    listed = await mine.result("ListTaskPushNotificationConfigs", {"taskId": task_id})
    assert [c["id"] for c in listed["configs"]] == ["c1"]
    assert (await mine.result("GetTaskPushNotificationConfig", config_id))["url"] == HOOK
    await mine.result("DeleteTaskPushNotificationConfig", config_id)
    canceled = await mine.result("CancelTask", by_id)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"


async def test_usage_counts_a_key_and_a_jwt_of_one_name_as_two_principals(
    http: httpx.AsyncClient, credentials: dict[str, str]
) -> None:
    for kind in ("key", "jwt"):
        await Caller(http, credentials[kind]).result("SendMessage", msg10("hi"))
    operator = Caller(http, credentials["operator"])
    report = await operator.result("a2ad/GetUsage", {"groupBy": ["principal"]})
    rows = {row["principal"]: row["totalTokens"] for row in report["rows"]}
    assert rows == {"alice": 7, f"{ISSUER}#alice": 7}
    for kind in ("key", "jwt"):  # neither is an operator: neither reads the totals
        answer = await Caller(http, credentials[kind]).call("a2ad/GetUsage", {})
        assert answer["error"]["data"][0]["reason"] == "PERMISSION_DENIED", answer


async def test_an_empty_principal_prefix_maps_jwt_subjects_onto_key_names(
    keys_file: Path, issuer: Issuer, credentials: dict[str, str]
) -> None:
    app = make_app(keys_file, issuer, principal_prefix="")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        by_key = Caller(http, credentials["key"])
        by_jwt = Caller(http, credentials["jwt"])
        task_id = (await by_key.result("SendMessage", msg10("hi")))["task"]["id"]
        assert (await by_jwt.result("GetTask", {"id": task_id}))["id"] == task_id
    await app.aclose()


async def test_a_principal_prefix_of_the_operators_choice_names_the_jwt_callers(
    keys_file: Path, issuer: Issuer, credentials: dict[str, str]
) -> None:
    app = make_app(keys_file, issuer, principal_prefix="idp:")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        await Caller(http, credentials["jwt"]).result("SendMessage", msg10("hi"))
        report = await Caller(http, credentials["operator"]).result(
            "a2ad/GetUsage", {"groupBy": ["principal"]}
        )
    await app.aclose()
    assert [row["principal"] for row in report["rows"]] == ["idp:alice"]


@pytest.mark.parametrize("prefix", [None, "idp:"])
def test_a_key_named_as_a_jwt_principal_is_refused_at_start(
    keys_file: Path, issuer: Issuer, prefix: str | None
) -> None:
    taken = f"{prefix if prefix is not None else ISSUER + '#'}alice"
    auth.add_key(str(keys_file), taken)
    with pytest.raises(auth.KeyFileError) as caught:
        make_app(keys_file, issuer, principal_prefix=prefix)
    said = str(caught.value)
    assert said.startswith(f"keys file {keys_file}: the principal {taken!r}")
    assert "subject 'alice'" in said and "--auth-jwt-principal-prefix" in said


def test_the_banner_line_says_how_jwt_principals_are_named(
    keys_file: Path, issuer: Issuer, credentials: dict[str, str]
) -> None:
    verifier = JwtVerifier(issuer.url, issuer=ISSUER, audience=AUDIENCE)
    both = CredentialAuthenticator(keys=ApiKeys.load(str(keys_file)), jwt=verifier)
    assert both.describe() == (
        f"API keys from {keys_file} (2 keys); "
        f"JWTs from {ISSUER} (keys: {issuer.url}; principals {ISSUER}#<sub>)"
    )
