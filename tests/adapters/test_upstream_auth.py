"""Credentials for the agents a2ad fronts (adapters/upstream_auth.py): the
``--upstream-auth FILE`` format and its errors, a token file through the real
``a2ad serve``, and OAuth2 client credentials against a real token endpoint
whose JWTs a real upstream checks: fetched once, kept, fetched again when the
upstream refuses the one kept; no secret in a log line or an answer."""

from __future__ import annotations

import base64
import json
import logging
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import ApiKeys, CredentialAuthenticator, create_app
from a2ad.adapters.remote import RemoteAgent
from a2ad.adapters.upstream_auth import OAuth2, UpstreamCredential, read_upstream_auth
from a2ad.server import auth
from a2ad.server.auth import JwtVerifier

from ..conftest import LiveServer
from ..jsonrpc import answer, rpc_body
from ..jwks_server import AUDIENCE, ISSUER, Issuer
from ..scripted import ScriptedAgent
from ..served import Served, run_a2ad
from ..threaded_server import ThreadedServer
from .fronting import V1, call, front, send

SECRET = "s3cret-client-secret-value"


# --- the file ---


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "upstreams.toml"
    path.write_text(text)
    return str(path)


def test_the_file_gives_each_agent_its_credential(tmp_path: Path) -> None:
    (tmp_path / "stock.token").write_text("tok-123\n")
    (tmp_path / "idp.secret").write_text(SECRET)
    path = _file(
        tmp_path,
        """
[stock]
token-file = "stock.token"

[pricing]
api-key = "key-456"
api-key-header = "X-Pricing-Key"

[orchestrator.oauth2]
token-url = "https://idp.example/token"
client-id = "a2ad"
client-secret-file = "idp.secret"
scope = "a2a"
""",
    )
    found = read_upstream_auth(path)
    assert found["stock"] == UpstreamCredential(token="tok-123")
    assert found["pricing"] == UpstreamCredential(api_key="key-456", api_key_header="X-Pricing-Key")
    grant = found["orchestrator"].oauth2
    assert grant is not None
    assert (grant.token_url, grant.client_id, grant.client_secret, grant.scope) == (
        "https://idp.example/token",
        "a2ad",
        SECRET,
        "a2a",
    )
    assert SECRET not in repr(found) and "tok-123" not in repr(found)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[stock]\ntoken = 'a'\napi-key = 'b'\n", "[stock]: give one of token"),
        ("[stock]\n", "found none"),
        ("[stock]\ntokn = 'a'\n", "unknown key 'tokn'"),
        ("[stock]\ntoken-file = 'missing'\n", "token-file missing: can't read it"),
        ("[stock]\ntoken = 'a'\ntoken-file = 'b'\n", "token or token-file, not both"),
        ("stock = 'a'\n", "[stock] must be a table"),
        ("[stock.oauth2]\ntoken-url = 'ftp://x'\n", "token-url must be"),
        (f"[stock.oauth2]\ntoken-url = 'https://x'\nclient-secret = '{SECRET}'\n", "client-id"),
        ("[stock.oauth2]\ntoken-url = 'https://x'\nclient-id = 'a'\n", "client-secret"),
        ("[stock\n", "not TOML"),
    ],
)
def test_a_bad_file_is_refused_naming_the_agent_and_key(
    tmp_path: Path, text: str, said: str
) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(ValueError, match="upstream-auth") as refused:
        read_upstream_auth(path)
    assert said in str(refused.value) and path in str(refused.value)
    assert SECRET not in str(refused.value)


def test_serve_refuses_a_credential_for_no_agent_served_elsewhere(tmp_path: Path) -> None:
    path = _file(tmp_path, "[stok]\ntoken = 'x'\n")
    done = run_a2ad(
        "serve",
        "--port",
        "0",
        "--store",
        "memory",
        "--agent",
        "stock=a2a+http://127.0.0.1:9/",
        "--agent",
        "echo=echo",
        "--upstream-auth",
        path,
    )
    assert done.returncode == 2, done.stderr
    assert "[stok] names no agent served elsewhere" in done.stderr
    assert "those served here: stock" in done.stderr


def test_a_token_file_reaches_the_upstream_through_serve(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    key = auth.add_key(str(keys), "front")
    (tmp_path / "up.token").write_text(key)
    path = _file(tmp_path, '[up]\ntoken-file = "up.token"\n')
    guarded = create_app(
        ScriptedAgent(), authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(keys)))
    )
    with LiveServer(guarded) as upstream:
        spec = f"up=a2a+{upstream.url}/"
        with Served("--agent", spec, "--store", "memory", "--upstream-auth", path) as served:
            with httpx.Client(base_url=served.url) as http:
                body = rpc_body("SendMessage", send("echo guarded"))
                task = answer(http.post("/agents/up/", json=body, headers=V1))["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            served.stop()
            assert key not in "\n".join(served.seen) and key not in str(task)


# --- OAuth2 client credentials ---


class TokenEndpoint:
    """An OAuth2 token endpoint on a real port: client credentials for
    ``a2ad``/SECRET get a JWT of ``issuer``'s key ``kid``."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self.kid = "k1"
        self.expires_in = 600
        self.asked: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._served = ThreadedServer(self._app, what="the token endpoint", interface="asgi3")
        self.url = f"http://127.0.0.1:{self._served.port}/token"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form = dict(urllib.parse.parse_qsl(body.decode()))
        headers = dict(scope["headers"])
        basic = headers.get(b"authorization", b"").decode()
        client = base64.b64decode(basic.removeprefix("Basic ")).decode() if basic else ""
        with self._lock:
            self.asked.append(form)
        if client != f"a2ad:{SECRET}" or form.get("grant_type") != "client_credentials":
            status, answer_ = 401, {"error": "invalid_client"}
        else:
            token = self.issuer.token(self.kid, sub="a2ad-front", expires_in=self.expires_in)
            status = 200
            answer_ = {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(answer_).encode()})

    def __enter__(self) -> TokenEndpoint:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with Issuer() as idp:
        idp.add_key("k1")
        idp.add_key("k2")
        idp.publish("k1")
        yield idp


@pytest.fixture(scope="module")
def upstream(issuer: Issuer) -> Iterator[LiveServer]:
    verifier = JwtVerifier(
        issuer.url, issuer=ISSUER, audience=AUDIENCE, refresh_seconds=0, refetch_seconds=0
    )
    app = create_app(ScriptedAgent(), authenticator=CredentialAuthenticator(jwt=verifier))
    with LiveServer(app) as live:
        yield live


@pytest.fixture
def endpoint(issuer: Issuer) -> Iterator[TokenEndpoint]:
    issuer.publish("k1")
    with TokenEndpoint(issuer) as served:
        yield served


async def _task(http: httpx.AsyncClient, text: str) -> dict[str, Any]:
    return dict((await call(http, "SendMessage", send(text)))["task"])


def _oauth2(endpoint: TokenEndpoint, secret: str = SECRET) -> UpstreamCredential:
    grant = OAuth2(token_url=endpoint.url, client_id="a2ad", client_secret=secret, scope="a2a")
    return UpstreamCredential(oauth2=grant)


async def test_an_oauth2_token_is_fetched_once_and_kept(
    upstream: LiveServer, endpoint: TokenEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = RemoteAgent(f"a2a+{upstream.url}/", credential=_oauth2(endpoint))
    async for http in front(agent):
        for word in ("one", "two"):
            task = await _task(http, f"echo {word}")
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    # The card and both turns on one token, asked for as client credentials with the scope.
    assert endpoint.asked == [{"grant_type": "client_credentials", "scope": "a2a"}]
    assert SECRET not in caplog.text


async def test_a_refused_token_is_fetched_again_once(
    issuer: Issuer, upstream: LiveServer, endpoint: TokenEndpoint
) -> None:
    agent = RemoteAgent(f"a2a+{upstream.url}/", credential=_oauth2(endpoint))
    async for http in front(agent):
        assert (await _task(http, "echo before"))["status"]["state"] == "TASK_STATE_COMPLETED"
        # The provider rotates its key: the kept token is refused, a new one is not.
        endpoint.kid = "k2"
        issuer.publish("k2")
        task = await _task(http, "echo after")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    assert len(endpoint.asked) == 2


async def test_a_wrong_client_secret_fails_the_turn_naming_the_endpoint_not_the_secret(
    upstream: LiveServer, endpoint: TokenEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "not-" + SECRET
    agent = RemoteAgent(f"a2a+{upstream.url}/", credential=_oauth2(endpoint, wrong))
    async for http in front(agent):
        task = await _task(http, "echo hi")
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    said = task["status"]["message"]["parts"][0]["text"]
    assert endpoint.url in said and "'a2ad'" in said and "401" in said, said
    assert wrong not in said and wrong not in caplog.text


def test_oauth2_and_pass_caller_are_refused_for_a_grpc_upstream() -> None:
    agent = RemoteAgent("grpc://127.0.0.1:9")
    grant = OAuth2(token_url="https://idp.example/token", client_id="a", client_secret="b")
    for credential in (UpstreamCredential(oauth2=grant), UpstreamCredential(pass_caller=True)):
        with pytest.raises(ValueError, match="OAuth2 client credentials and pass-caller are for"):
            agent.use_credential(credential)


# --- the caller's own credential, passed through ---


def test_pass_caller_alone_or_with_a_fallback_is_a_credential(tmp_path: Path) -> None:
    path = _file(tmp_path, "[a]\npass-caller = true\n[b]\npass-caller = true\ntoken = 't'\n")
    found = read_upstream_auth(path)
    assert found["a"] == UpstreamCredential(pass_caller=True)
    assert found["b"] == UpstreamCredential(pass_caller=True, token="t")
    with pytest.raises(ValueError, match="pass-caller must be true or false"):
        read_upstream_auth(_file(tmp_path, "[a]\npass-caller = 'yes'\n"))


def test_the_callers_own_key_reaches_the_upstream_and_a2ads_own_without_one(
    tmp_path: Path,
) -> None:
    # One keys file for both servers: each caller's key is good upstream too (as a JWT
    # from an identity provider both trust would be).
    keys = tmp_path / "keys.toml"
    alice = auth.add_key(str(keys), "alice")
    bob = auth.add_key(str(keys), "bob")
    front_key = auth.add_key(str(keys), "front")
    guard = CredentialAuthenticator(keys=ApiKeys.load(str(keys)))
    with LiveServer(create_app(ScriptedAgent(), authenticator=guard)) as upstream:
        credential = UpstreamCredential(pass_caller=True, token=front_key)
        agent = RemoteAgent(f"a2a+{upstream.url}/", credential=credential)
        front_guard = CredentialAuthenticator(keys=ApiKeys.load(str(keys)))
        with LiveServer(create_app(agent, authenticator=front_guard)) as front:
            agent_card = httpx.get(f"{front.url}/.well-known/agent-card.json").json()
            assert agent_card["name"] == "scripted"  # read at start with a2ad's own key
            for key in (alice, bob):
                body = rpc_body("SendMessage", send("echo mine"))
                headers = {**V1, "Authorization": f"Bearer {key}"}
                got = answer(httpx.post(front.url + "/", json=body, headers=headers))
                assert got["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", got

        def upstream_tasks(key: str) -> int:
            body = rpc_body("ListTasks", {})
            got = answer(
                httpx.post(upstream.url + "/", json=body, headers={**V1, "X-API-Key": key})
            )
            return len(got["result"]["tasks"])

        # Upstream, each task is its caller's own, none a2ad's.
        assert (upstream_tasks(alice), upstream_tasks(bob), upstream_tasks(front_key)) == (1, 1, 0)


def test_the_callers_credential_is_kept_only_once_an_agent_asks(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    alice = auth.add_key(str(keys), "alice")
    probe = "tests.adapters.sample_functions:credential_seen"
    allowed = ["--upstream-auth", _file(tmp_path, "[up]\npass-caller = true\n")]
    with LiveServer(create_app(ScriptedAgent())) as upstream:
        cases = [
            (["--agent", probe], "/", "none"),  # no agent asked: not kept, even with auth on
            (
                ["--agent", f"probe={probe}", "--agent", f"up=a2a+{upstream.url}/", *allowed],
                "/agents/probe/",
                "kept",  # a fronted agent with pass-caller asked: kept for every turn
            ),
        ]
        for flags, where, seen in cases:
            with Served(*flags, "--store", "memory", "--auth", str(keys)) as served:
                with httpx.Client(base_url=served.url) as http:
                    body = rpc_body("SendMessage", send("who"))
                    headers = {**V1, "Authorization": f"Bearer {alice}"}
                    task = answer(http.post(where, json=body, headers=headers))["result"]["task"]
            assert task["artifacts"][0]["parts"][0]["text"] == seen, task


def _cookie_setting_upstream(seen: list[str]) -> ThreadedServer:
    """An upstream that sets a cookie on every answer and notes the cookies sent to it."""

    async def app(scope: dict[str, Any], receive: Any, send_: Any) -> None:
        headers = dict(scope["headers"])
        seen.append(headers.get(b"cookie", b"").decode())
        base = f"http://{headers[b'host'].decode()}"
        if scope["method"] == "GET":
            body: Any = {
                "name": "cookies",
                "description": "Sets cookies.",
                "supportedInterfaces": [
                    {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                ],
                "capabilities": {"streaming": False},
                "skills": [],
            }
        else:
            more, raw = True, b""
            while more:
                message = await receive()
                raw += message.get("body", b"")
                more = message.get("more_body", False)
            task = {"id": "up", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
            body = {"jsonrpc": "2.0", "id": json.loads(raw)["id"], "result": {"task": task}}
        await send_(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"set-cookie", f"session=caller-{len(seen)}; Path=/".encode()),
                ],
            }
        )
        await send_({"type": "http.response.body", "body": json.dumps(body).encode()})

    return ThreadedServer(app, what="a cookie-setting upstream", interface="asgi3")


async def test_a_cookie_the_upstream_sets_for_one_call_goes_with_no_other() -> None:
    seen: list[str] = []
    served = _cookie_setting_upstream(seen)
    served.start()
    try:
        url = f"http://127.0.0.1:{served.port}"
        for credential in (None, UpstreamCredential(pass_caller=True)):
            agent = RemoteAgent(f"a2a+{url}/", credential=credential)
            async for http in front(agent):
                for text in ("one", "two"):
                    task = await _task(http, text)
                    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    finally:
        served.stop()
    assert len(seen) >= 6 and set(seen) == {""}, seen  # no request carried a cookie
