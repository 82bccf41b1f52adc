"""Authentication: API keys and JWTs, on every binding, and what callers and the log see.

The keys are made by ``add_key`` into a real keys file; the JWTs are signed by
the test's own keys and checked against a JWKS served on a real port.
"""

from __future__ import annotations

import hmac
import json
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, ApiKeys, Caller, CredentialAuthenticator, JwtVerifier, create_app
from a2ad.agent import TaskContext
from a2ad.server import auth

from ..conftest import msg03, msg10
from ..jsonrpc import rpc_body
from ..jwks_server import AUDIENCE, ISSUER, Issuer

V1 = {"A2A-Version": "1.0"}


class Recorder(Agent):
    """Completes every task, keeping who asked."""

    name = "recorder"

    def __init__(self) -> None:
        self.callers: list[Caller] = []

    async def run(self, ctx: TaskContext) -> None:
        self.callers.append(ctx.request.caller)
        await ctx.artifact("ok")


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.toml"


@pytest.fixture
def alice_key(keys_file: Path) -> str:
    return auth.add_key(str(keys_file), "alice", tenants=["team-a"], roles=["operator"])


@pytest.fixture
def bob_key(keys_file: Path, alice_key: str) -> str:
    return auth.add_key(str(keys_file), "bob")


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def key_app(agent: Agent, keys_file: Path) -> A2AApp:
    keys = ApiKeys.load(str(keys_file))
    return create_app(agent, authenticator=CredentialAuthenticator(keys=keys))


@pytest.fixture
async def http(
    recorder: Recorder, keys_file: Path, bob_key: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = key_app(recorder, keys_file)
    transport = httpx.ASGITransport(app=app, client=("10.1.2.3", 4567))
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


def send(version: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """A fresh message each time (a messageId seen before returns its task)."""
    if version == "1.0":
        return "SendMessage", msg10("hi"), V1
    return "message/send", msg03("hi", messageId=str(uuid.uuid4())), {}


def assert_401(r: httpx.Response, *, given: bool) -> dict[str, Any]:
    assert r.status_code == 401, r.text
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="a2ad"')
    assert ('error="invalid_token"' in challenge) is given
    return r.json()  # type: ignore[no-any-return]


def assert_jsonrpc_unauthenticated(body: dict[str, Any]) -> str:
    assert body["id"] is None
    error = body["error"]
    assert error["code"] == -31401
    (info,) = error["data"]
    assert info["reason"] == "UNAUTHENTICATED"
    assert info["domain"] == "a2a-protocol.org"
    return str(error["message"])


# --- API keys, JSON-RPC and REST --------------------------------------------


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_jsonrpc_without_a_credential_is_401_with_a_jsonrpc_error(
    http: httpx.AsyncClient, recorder: Recorder, version: str
) -> None:
    method, params, headers = send(version)
    r = await http.post("/", json=rpc_body(method, params), headers=headers)
    message = assert_jsonrpc_unauthenticated(assert_401(r, given=False))
    assert "Authorization: Bearer" in message
    assert recorder.callers == []


@pytest.mark.parametrize("path", ["/tasks/t1", "/v1/tasks/t1", "/team-a/tasks/t1"])
async def test_rest_without_a_credential_is_401_with_a_status_body(
    http: httpx.AsyncClient, path: str
) -> None:
    body = assert_401(await http.get(path), given=False)
    error = body["error"]
    assert (error["code"], error["status"]) == (401, "UNAUTHENTICATED")
    assert error["details"][0]["reason"] == "UNAUTHENTICATED"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_a_wrong_key_is_401_invalid_token(http: httpx.AsyncClient, version: str) -> None:
    method, params, headers = send(version)
    auth_header = {"Authorization": "Bearer a2ad_not-a-key-of-this-server"}
    r = await http.post("/", json=rpc_body(method, params), headers={**headers, **auth_header})
    assert "unknown or revoked" in assert_jsonrpc_unauthenticated(assert_401(r, given=True))
    r = await http.get("/v1/tasks/t1", headers={"X-API-Key": "wrong"})
    assert assert_401(r, given=True)["error"]["status"] == "UNAUTHENTICATED"


async def test_a_basic_credential_is_refused_naming_the_schemes_to_use(
    http: httpx.AsyncClient,
) -> None:
    r = await http.get("/tasks/t1", headers={"Authorization": "Basic YWxpY2U6cHc="})
    assert "Authorization: Bearer" in assert_401(r, given=True)["error"]["message"]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
@pytest.mark.parametrize("how", ["bearer", "x-api-key"])
async def test_the_right_key_is_served_and_the_agent_sees_its_caller(
    http: httpx.AsyncClient, recorder: Recorder, alice_key: str, version: str, how: str
) -> None:
    method, params, headers = send(version)
    credential = (
        {"Authorization": f"Bearer {alice_key}"} if how == "bearer" else {"X-API-Key": alice_key}
    )
    r = await http.post("/", json=rpc_body(method, params), headers={**headers, **credential})
    assert r.status_code == 200 and "result" in r.json(), r.text
    assert recorder.callers == [
        Caller(
            principal="alice",
            tenants=("team-a",),
            roles=frozenset({"operator"}),
            authenticated=True,
        )
    ]


async def test_rest_with_the_right_key_is_served(
    http: httpx.AsyncClient, recorder: Recorder, bob_key: str
) -> None:
    r = await http.post(
        "/message:send", json=msg10("hi"), headers={**V1, "Authorization": f"Bearer {bob_key}"}
    )
    assert r.status_code == 200, r.text
    assert [c.principal for c in recorder.callers] == ["bob"]
    task_id = r.json()["task"]["id"]
    got = await http.get(f"/tasks/{task_id}", headers={"X-API-Key": bob_key})
    assert got.status_code == 200 and got.json()["id"] == task_id


async def test_a_key_removed_from_the_file_no_longer_works(
    tmp_path: Path, recorder: Recorder
) -> None:
    old = auth.add_key(str(tmp_path / "before.toml"), "carol")
    auth.add_key(str(tmp_path / "after.toml"), "dave")  # carol's entry is gone
    app = key_app(recorder, tmp_path / "after.toml")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        r = await c.post("/", json=rpc_body(*send("0.3")[:2]), headers={"X-API-Key": old})
    await app.aclose()
    assert_401(r, given=True)


def test_keys_are_compared_in_constant_time_whether_known_or_not(
    keys_file: Path, alice_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    keys = ApiKeys.load(str(keys_file))
    assert keys.verify(alice_key).principal == "alice"
    with pytest.raises(auth.AuthenticationFailed):
        keys.verify(alice_key[:-1] + ("A" if alice_key[-1] != "A" else "B"))
    assert len(compared) == 2
    assert all(len(a) == len(b) == 32 for a, b in compared)


async def test_an_auth_failure_logs_one_line_with_reason_and_address_never_the_token(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "a2ad_this-token-must-never-be-logged"
    with caplog.at_level(logging.INFO, logger="a2ad"):
        await http.post("/", json=rpc_body(*send("0.3")[:2]), headers={"X-API-Key": secret})
    (record,) = [r for r in caplog.records if r.name == "a2ad.auth"]
    fields = vars(record)
    assert (fields["reason"], fields["remote"], fields["path"]) == (
        "unknown key",
        "10.1.2.3:4567",
        "/",
    )
    everything = caplog.text + json.dumps({k: str(v) for k, v in fields.items()})
    assert secret not in everything and "this-token" not in everything


# --- the card ----------------------------------------------------------------


async def test_the_card_stays_public_and_declares_both_key_schemes(
    http: httpx.AsyncClient,
) -> None:
    combined = (await http.get("/.well-known/agent-card.json")).json()
    v1 = (await http.get("/.well-known/agent-card.json", headers=V1)).json()
    v03 = (await http.get("/.well-known/agent-card.json", headers={"A2A-Version": "0.3"})).json()
    for card in (combined, v1):
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"] == {
            "name": "X-API-Key",
            "location": "header",
            "description": "An a2ad API key",
        }
        assert card["securityRequirements"] == [
            {"schemes": {"bearer": {"list": []}}},
            {"schemes": {"apiKey": {"list": []}}},
        ]
    for card in (combined, v03):
        assert card["securitySchemes"]["bearer"]["type"] == "http"
        assert card["securitySchemes"]["apiKey"]["type"] == "apiKey"
        assert card["securitySchemes"]["apiKey"]["in"] == "header"
        assert card["security"] == [{"bearer": []}, {"apiKey": []}]
    assert "securitySchemes" not in (await public_card_without_auth())


async def public_card_without_auth() -> dict[str, Any]:
    app = create_app(Recorder())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        card: dict[str, Any] = (await c.get("/.well-known/agent-card.json")).json()
    await app.aclose()
    return card


# --- the extended card ----------------------------------------------------------


class Extended(Recorder):
    def extended_card(self, request: Any) -> Any:
        return self.card_info().replace(description="for members")


@pytest.mark.parametrize(
    ("method", "headers"),
    [("GetExtendedAgentCard", V1), ("agent/getAuthenticatedExtendedCard", {})],
)
async def test_with_auth_on_only_authenticated_callers_get_the_extended_card(
    keys_file: Path, alice_key: str, method: str, headers: dict[str, str]
) -> None:
    app = key_app(Extended(), keys_file)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        anonymous = await c.post("/", json=rpc_body(method, {}), headers=headers)
        member = await c.post(
            "/", json=rpc_body(method, {}), headers={**headers, "X-API-Key": alice_key}
        )
    await app.aclose()
    assert_jsonrpc_unauthenticated(assert_401(anonymous, given=False))
    card = member.json()["result"]
    assert card["description"] == "for members"
    # It declares how to authenticate, as the public card does.
    assert {"bearer", "apiKey"} <= set(card["securitySchemes"])


def test_the_default_extended_card_check_with_auth_wants_an_authenticated_caller() -> None:
    from a2ad import RequestContext
    from a2ad.server.app import authenticated_only

    assert not authenticated_only(RequestContext())
    assert authenticated_only(RequestContext(caller=Caller(principal="x", authenticated=True)))


# --- the keys file ----------------------------------------------------------------


def test_add_key_writes_the_hash_not_the_key_with_mode_0600(keys_file: Path) -> None:
    first = auth.add_key(str(keys_file), "alice", tenants=["t1", "t2"], roles=["operator"])
    second = auth.add_key(str(keys_file), 'b"o\\b')
    text = keys_file.read_text()
    assert first not in text and second not in text
    assert first.startswith("a2ad_") and len(first) == len("a2ad_") + 43
    assert keys_file.stat().st_mode & 0o777 == 0o600
    keys = ApiKeys.load(str(keys_file))
    assert len(keys) == 2
    assert keys.verify(first).tenants == ("t1", "t2")
    assert keys.verify(second).principal == 'b"o\\b'


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[key]]\nprincipal = 'a'\n", "`sha256` must be 64 hex digits"),
        ("[[key]]\nsha256 = '" + "0" * 64 + "'\n", "`principal` must be"),
        ("[[key]]\nprincipal='a'\nsha256='" + "0" * 64 + "'\ntenent='x'\n", "unknown field"),
        ("[[key]]\nprincipal='a'\nsha256='" + "0" * 64 + "'\nroles=[1]\n", "`roles` must"),
        ("[[key]\n", "not valid TOML"),
    ],
)
def test_a_bad_keys_file_is_refused_naming_the_entry(keys_file: Path, text: str, said: str) -> None:
    keys_file.write_text(text)
    with pytest.raises(auth.KeyFileError, match=r"^keys file ") as caught:
        ApiKeys.load(str(keys_file))
    assert said in str(caught.value)


def test_add_key_refuses_to_append_to_a_file_it_cannot_read_back(keys_file: Path) -> None:
    keys_file.write_text("not toml [")
    with pytest.raises(auth.KeyFileError):
        auth.add_key(str(keys_file), "alice")
    assert keys_file.read_text() == "not toml ["


# --- JWT ------------------------------------------------------------------------


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with Issuer() as idp:
        idp.add_key("k1")
        idp.publish("k1")
        yield idp


def jwt_app(agent: Agent, jwks: str, *, keys: ApiKeys | None = None, **options: Any) -> A2AApp:
    verifier = JwtVerifier(jwks, issuer=ISSUER, audience=AUDIENCE, **options)
    return create_app(agent, authenticator=CredentialAuthenticator(keys=keys, jwt=verifier))


@pytest.fixture
async def jwt_http(recorder: Recorder, issuer: Issuer) -> AsyncIterator[httpx.AsyncClient]:
    app = jwt_app(recorder, issuer.url, refetch_seconds=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


async def send_with(http: httpx.AsyncClient, token: str) -> httpx.Response:
    return await http.post(
        "/", json=rpc_body(*send("1.0")[:2]), headers={**V1, "Authorization": f"Bearer {token}"}
    )


async def test_a_good_jwt_makes_the_caller_from_its_claims(
    jwt_http: httpx.AsyncClient, recorder: Recorder, issuer: Issuer
) -> None:
    token = issuer.token("k1", sub="erin", tenant=["t1", "t2"], roles="operator auditor")
    r = await send_with(jwt_http, token)
    assert r.status_code == 200 and "result" in r.json(), r.text
    assert recorder.callers == [
        Caller(
            principal=f"{ISSUER}#erin",
            tenants=("t1", "t2"),
            roles=frozenset({"operator", "auditor"}),
            authenticated=True,
        )
    ]


async def test_claim_names_are_configurable_and_may_be_nested(
    recorder: Recorder, issuer: Issuer
) -> None:
    app = jwt_app(
        recorder,
        issuer.url,
        principal_claim="email",
        tenant_claim="org",
        roles_claim="realm_access.roles",
    )
    token = issuer.token("k1", email="f@x.org", org="acme", realm_access={"roles": ["operator"]})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        assert (await send_with(c, token)).status_code == 200
    await app.aclose()
    (caller,) = recorder.callers
    assert (caller.principal, caller.tenants, caller.roles) == (
        f"{ISSUER}#f@x.org",
        ("acme",),
        frozenset({"operator"}),
    )


@pytest.mark.parametrize(
    ("claims", "said"),
    [
        ({"expires_in": -3600}, "expired"),
        ({"iss": "https://other.example"}, "another issuer"),
        ({"aud": "someone-else"}, "another audience"),
        ({"sign_with": "k2"}, "signature is not valid"),
        ({"sub": None}, "no 'sub' claim"),
    ],
    ids=["expired", "issuer", "audience", "signature", "no-subject"],
)
async def test_a_bad_jwt_is_401(
    jwt_http: httpx.AsyncClient,
    issuer: Issuer,
    recorder: Recorder,
    claims: dict[str, Any],
    said: str,
) -> None:
    issuer.add_key("k2")  # not published: only a forger has it
    r = await send_with(jwt_http, issuer.token("k1", **claims))
    assert said in assert_jsonrpc_unauthenticated(assert_401(r, given=True))
    assert recorder.callers == []


async def test_a_jwt_of_an_unknown_kid_is_401_and_a_rotated_in_key_is_picked_up(
    jwt_http: httpx.AsyncClient, issuer: Issuer, recorder: Recorder
) -> None:
    issuer.add_key("k2")
    assert (await send_with(jwt_http, issuer.token("k1"))).status_code == 200
    r = await send_with(jwt_http, issuer.token("k2"))
    assert "unknown key" in assert_jsonrpc_unauthenticated(assert_401(r, given=True))
    issuer.publish("k1", "k2")  # the provider rotates: k2 joins the set
    assert (await send_with(jwt_http, issuer.token("k2", sub="new"))).status_code == 200
    assert [c.principal for c in recorder.callers] == [f"{ISSUER}#alice", f"{ISSUER}#new"]


async def test_unknown_kids_refetch_the_jwks_at_most_once_per_interval(
    recorder: Recorder, issuer: Issuer
) -> None:
    issuer.add_key("k2")
    app = jwt_app(recorder, issuer.url, refetch_seconds=3600)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        assert (await send_with(c, issuer.token("k1"))).status_code == 200
        for _ in range(5):
            assert (await send_with(c, issuer.token("k2"))).status_code == 401
    await app.aclose()
    assert issuer.fetches == 1


async def test_a_jwks_file_is_read_at_start_and_again_for_an_unknown_kid(
    recorder: Recorder, issuer: Issuer, tmp_path: Path
) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(issuer.jwks()))
    app = jwt_app(recorder, str(jwks), refetch_seconds=0)
    issuer.add_key("k2")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        assert (await send_with(c, issuer.token("k1"))).status_code == 200
        assert (await send_with(c, issuer.token("k2"))).status_code == 401
        issuer.publish("k1", "k2")
        jwks.write_text(json.dumps(issuer.jwks()))
        assert (await send_with(c, issuer.token("k2"))).status_code == 200
    await app.aclose()
    assert issuer.fetches == 0


def test_a_missing_jwks_file_stops_the_start() -> None:
    with pytest.raises(ValueError, match="can't read a JWKS"):
        JwtVerifier("/nonexistent/jwks.json", issuer=ISSUER, audience=AUDIENCE)


async def test_keys_and_jwts_together_each_work_and_the_card_declares_all_three(
    recorder: Recorder, issuer: Issuer, keys_file: Path, alice_key: str
) -> None:
    app = jwt_app(recorder, issuer.url, keys=ApiKeys.load(str(keys_file)))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        assert (await send_with(c, alice_key)).status_code == 200
        assert (await send_with(c, issuer.token("k1", sub="jwt-user"))).status_code == 200
        card = (await c.get("/.well-known/agent-card.json", headers=V1)).json()
    await app.aclose()
    assert [x.principal for x in recorder.callers] == ["alice", f"{ISSUER}#jwt-user"]
    assert card["securitySchemes"]["jwt"] == {
        "httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "bearerFormat": "JWT",
            "description": f"A JWT from {ISSUER} for the audience {AUDIENCE}",
        }
    }
    assert len(card["securityRequirements"]) == 3


async def test_with_a_discovery_url_the_card_declares_openid_connect(issuer: Issuer) -> None:
    discovery = f"{ISSUER}/.well-known/openid-configuration"
    app = jwt_app(Recorder(), issuer.url, openid_config_url=discovery)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        v03 = (await c.get("/.well-known/agent-card.json", headers={"A2A-Version": "0.3"})).json()
        v1 = (await c.get("/.well-known/agent-card.json", headers=V1)).json()
    await app.aclose()
    assert v1["securitySchemes"]["oidc"]["openIdConnectSecurityScheme"]["openIdConnectUrl"] == (
        discovery
    )
    assert v03["securitySchemes"]["oidc"]["type"] == "openIdConnect"
    assert v03["securitySchemes"]["oidc"]["openIdConnectUrl"] == discovery


# --- named agents: the door before the routing ------------------------------------


@pytest.fixture
async def agents_http(keys_file: Path, bob_key: str) -> AsyncIterator[httpx.AsyncClient]:
    keys = ApiKeys.load(str(keys_file))
    agents = {"stock": Recorder(), "pricing": Recorder()}
    app = create_app(agents, authenticator=CredentialAuthenticator(keys=keys))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


@pytest.mark.parametrize(
    ("method", "path", "jsonrpc"),
    [
        ("POST", "/agents/billing/", True),
        ("GET", "/agents/billing/tasks/t1", False),
        ("GET", "/agents/billing/.well-known/agent-card.json", False),
    ],
)
async def test_an_unknown_agent_path_without_a_credential_is_401_and_names_no_agent(
    agents_http: httpx.AsyncClient, method: str, path: str, jsonrpc: bool
) -> None:
    r = await agents_http.request(method, path, json=rpc_body("GetTask", {"id": "t1"}), headers=V1)
    body = assert_401(r, given=False)
    if jsonrpc:
        assert_jsonrpc_unauthenticated(body)
    else:
        assert body["error"]["status"] == "UNAUTHENTICATED"
    assert "stock" not in r.text and "pricing" not in r.text and "billing" not in r.text


async def test_an_unknown_agent_path_with_a_credential_is_404_naming_the_path_and_agents(
    agents_http: httpx.AsyncClient, bob_key: str
) -> None:
    r = await agents_http.get("/agents/billing/tasks/t1", headers={"X-API-Key": bob_key})
    assert r.status_code == 404, r.text
    message = r.json()["error"]["message"]
    assert message.startswith("GET /agents/billing/tasks/t1: this server has no agent 'billing'")
    assert "stock, pricing" in message
    r = await agents_http.get("/agents/billing/", headers={"X-API-Key": "a2ad_wrong"})
    assert_401(r, given=True)


async def test_a_known_agents_card_stays_public(agents_http: httpx.AsyncClient) -> None:
    r = await agents_http.get("/agents/stock/.well-known/agent-card.json", headers=V1)
    assert r.status_code == 200 and r.json()["supportedInterfaces"], r.text
