"""The configurable limits, each at its edge: exactly at the limit passes, one
over is refused with an error that names the limit, its value and how to change
it, and a refused request leaves the store as it was."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, AppSettings, assemble, create_app
from a2ad.engine.config import EngineConfig
from a2ad.server import auth, limits
from a2ad.server.auth import ApiKeys, CredentialAuthenticator
from a2ad.server.limits import Limits, RateLimiter
from a2ad.settings import AuthSettings

from ..conftest import V1, LiveServer, Rpc, msg03, wait_for
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent


def client_of(app: A2AApp, **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test", headers=headers
    )


def rpc_request(text: str, *, pad: int = 0) -> bytes:
    body = rpc_body("message/send", msg03(text))
    return json.dumps(body).encode() + b" " * pad


def message10(*parts: dict[str, Any], task_id: str = "") -> dict[str, Any]:
    msg: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if task_id:
        msg["taskId"] = task_id
    return {"message": msg}


def rpc_error(body: dict[str, Any]) -> dict[str, Any]:
    assert "error" in body, body
    return body["error"]  # type: ignore[no-any-return]


def reason(error: dict[str, Any]) -> str:
    return str(error["data"][0]["reason"])


async def task_count(app: A2AApp) -> int:
    return len(await app.store.list_tasks())


# --- request body ---


async def test_a_body_exactly_at_max_body_bytes_passes_and_one_byte_more_is_413() -> None:
    body = rpc_request("echo hi")
    app = create_app(ScriptedAgent(), limits=Limits(max_body_bytes=len(body)))
    async with client_of(app) as c:
        ok = await c.post("/", content=body, headers={"content-type": "application/json"})
        assert ok.status_code == 200 and "result" in ok.json(), ok.text
        over = await c.post("/", content=body + b" ", headers={"content-type": "application/json"})
        assert over.status_code == 413
        error = rpc_error(over.json())
        assert error["code"] == -32600
        assert f"limit of {len(body)} bytes" in error["message"]
        assert "--max-body-bytes" in error["message"]
        assert error["data"][0]["metadata"] == {"limit": "maxBodyBytes", "value": str(len(body))}
    assert await task_count(app) == 1
    await app.aclose()


async def test_a_rest_body_over_max_body_bytes_is_413_with_a_status_body() -> None:
    body = json.dumps(message10({"text": "echo hi"})).encode()
    app = create_app(ScriptedAgent(), limits=Limits(max_body_bytes=len(body)))
    async with client_of(app) as c:
        headers = {"content-type": "application/json"}
        ok = await c.post("/message:send", content=body, headers=headers)
        assert ok.status_code == 200, ok.text
        over = await c.post("/message:send", content=body + b"\n", headers=headers)
        assert over.status_code == 413
        status = over.json()["error"]
        assert status["code"] == 413 and status["status"] == "INVALID_ARGUMENT"
        assert str(len(body)) in status["message"] and "--max-body-bytes" in status["message"]
    await app.aclose()


# --- message parts ---


async def test_max_parts_at_the_limit_passes_and_one_more_is_invalid_params() -> None:
    app = create_app(ScriptedAgent(), limits=Limits(max_parts=3))
    async with client_of(app) as c:
        rpc = Rpc(c)
        three = [{"kind": "text", "text": "echo"}] * 3
        params = {"message": {"role": "user", "parts": three, "messageId": "m3"}}
        ok = await rpc("message/send", params)
        assert ok["result"]["status"]["state"] == "completed", ok
        params = {"message": {"role": "user", "parts": three * 2, "messageId": "m6"}}
        error = rpc_error(await rpc("message/send", params))
        assert error["code"] == -32602
        assert "`message.parts` has 6 parts" in error["message"]
        assert "limit of 3 parts (maxParts)" in error["message"]
        assert "--max-parts" in error["message"]
        assert error["data"][1]["fieldViolations"][0]["field"] == "message.parts"
    assert await task_count(app) == 1
    await app.aclose()


@pytest.mark.parametrize(
    ("part", "over", "field"),
    [
        ({"text": "é" * 5}, {"text": "é" * 5 + "x"}, "text"),  # bytes, not characters
        ({"data": {"k": "12345"}}, {"data": {"k": "123456"}}, "data"),  # {"k":"12345"}: 13
        ({"raw": base64.b64encode(b"x" * 13).decode()}, None, "raw"),
    ],
    ids=["text", "data", "raw"],
)
async def test_max_part_bytes_at_the_limit_passes_and_one_byte_more_names_the_part(
    part: dict[str, Any], over: dict[str, Any] | None, field: str
) -> None:
    limit = {"text": 10, "data": 13, "raw": 13}[field]
    if over is None:
        over = {"raw": base64.b64encode(b"x" * (limit + 1)).decode()}
    app = create_app(ScriptedAgent(), limits=Limits(max_part_bytes=limit))
    async with client_of(app, **V1) as c:
        first = {"text": "echo"}
        ok = await c.post("/message:send", json=message10(first, part))
        assert ok.status_code == 200, ok.text
        refused = await c.post("/message:send", json=message10(first, over))
        assert refused.status_code == 400
        status = refused.json()["error"]
        assert f"`message.parts[1].{field}` is {limit + 1} bytes" in status["message"]
        assert f"limit of {limit} bytes (maxPartBytes)" in status["message"]
        violation = status["details"][1]["fieldViolations"][0]
        assert violation["field"] == f"message.parts[1].{field}"
    assert await task_count(app) == 1
    await app.aclose()


# --- history and artifacts ---


async def test_history_at_max_history_is_kept_whole_and_past_it_the_oldest_go_noted() -> None:
    # "input": the user's message, the agent's "on it" and its question: 3 messages.
    app = create_app(ScriptedAgent(), engine=EngineConfig(max_history=3))
    async with client_of(app) as c:
        rpc = Rpc(c)
        task = (await rpc("message/send", msg03("input which?")))["result"]
        assert task["status"]["state"] == "input-required"
        assert len(task["history"]) == 3
        assert "a2ad" not in task.get("metadata", {})
        first = task["history"][0]["messageId"]
        answer = await rpc("message/send", msg03("blue", taskId=task["id"]))
        done = answer["result"]
        assert done["status"]["state"] == "completed"
        assert len(done["history"]) == 3
        assert first not in [m["messageId"] for m in done["history"]]
        assert done["metadata"]["a2ad"] == {"historyDropped": 1}
        again = (await rpc("tasks/get", {"id": task["id"]}))["result"]
        assert again["metadata"]["a2ad"] == {"historyDropped": 1}
    await app.aclose()


@pytest.mark.parametrize(("limit", "kept"), [(4, 4), (3, 3)], ids=["at", "one-over"])
async def test_artifacts_past_max_artifacts_are_dropped_and_the_task_still_completes(
    limit: int, kept: int
) -> None:
    app = create_app(
        ScriptedAgent(), engine=EngineConfig(max_artifacts=limit)
    )  # "parts" makes 4 artifacts
    async with client_of(app) as c:
        task = (await Rpc(c)("message/send", msg03("parts")))["result"]
        assert task["status"]["state"] == "completed"
        assert len(task["artifacts"]) == kept
    await app.aclose()


@pytest.mark.parametrize(
    "limits",
    [
        {"max_parts": 0},
        {"max_parts": 10_001},
        {"max_history": 1001},
        {"max_artifacts": 0},
        {"max_part_bytes": 0},
        {"max_tasks_per_principal": -1},
        {"rate_limit": -1.0},
    ],
)
def test_a_limit_out_of_its_range_is_a_value_error_naming_it(limits: dict[str, Any]) -> None:
    (name,) = limits
    with pytest.raises(ValueError, match=name):
        app_with(**limits)


# --- per-principal quotas, with real API keys ---


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    return path, {
        "ann": auth.add_key(str(path), "ann", tenants=["acme"]),
        "bob": auth.add_key(str(path), "bob", tenants=["acme"]),
    }


ENGINE_LIMITS = ("max_history", "max_artifacts", "max_tasks_per_principal", "shutdown_grace")


def app_with(
    authenticator: CredentialAuthenticator | None = None, rate_clock: Any = None, **options: Any
) -> A2AApp:
    """The scripted agent's app with these limits, each where it belongs: the
    engine's, the server's (Limits), and the rate limiter's clock."""
    engine = {k: v for k, v in options.items() if k in ENGINE_LIMITS}
    server = {k: v for k, v in options.items() if k not in ENGINE_LIMITS}
    settings = AppSettings(
        engine=EngineConfig(**engine),
        limits=Limits(**server),
        auth=AuthSettings(authenticator=authenticator),
        **({"rate_clock": rate_clock} if rate_clock is not None else {}),
    )
    return assemble(ScriptedAgent(), settings)


def keyed_app(keys: tuple[Path, dict[str, str]], **limits: Any) -> A2AApp:
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(str(keys[0])))
    return app_with(authenticator=authenticator, shutdown_grace=0, **limits)


@pytest.fixture
async def quota_app(keys: tuple[Path, dict[str, str]]) -> AsyncIterator[A2AApp]:
    app = keyed_app(keys, max_tasks_per_principal=2)
    yield app
    await app.aclose()


async def test_anonymous_callers_at_the_task_quota_are_told_they_share_one_count() -> None:
    app = create_app(ScriptedAgent(), engine=EngineConfig(max_tasks_per_principal=1))
    try:
        async with client_of(app) as http:
            rpc = Rpc(http)
            assert (await rpc("message/send", background("hang")))["result"]["id"]
            r = await http.post("/", json=rpc.body("message/send", background("hang")))
    finally:
        await app.aclose()
    assert r.status_code == 429
    error = rpc_error(r.json())
    assert error["message"].startswith(
        "anonymous callers, counted together, have 1 task in flight, the server's limit "
        "(maxTasksPerPrincipal 1); wait for one to finish"
    ), error["message"]
    assert "principal ''" not in error["message"] and "tenant" not in error["message"]


def bearer(keys: tuple[Path, dict[str, str]], name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {keys[1][name]}"}


def background(text: str, **extra: Any) -> dict[str, Any]:
    return {**msg03(text, **extra), "configuration": {"blocking": False}}


async def test_a_principal_at_its_task_quota_is_refused_429_and_others_are_not(
    quota_app: A2AApp, keys: tuple[Path, dict[str, str]]
) -> None:
    async with (
        client_of(quota_app, **bearer(keys, "ann")) as ann_c,
        client_of(quota_app, **bearer(keys, "bob")) as bob_c,
    ):
        ann, bob = Rpc(ann_c), Rpc(bob_c)
        first = (await ann("message/send", background("hang")))["result"]
        await ann("message/send", background("hang"))  # 2: exactly at the quota
        r = await ann_c.post("/", json=ann.body("message/send", background("hang")))
        assert r.status_code == 429
        error = rpc_error(r.json())
        assert error["code"] == -32000 and reason(error) == "QUOTA_EXCEEDED"
        assert error["message"].startswith(
            "principal 'ann' has 2 tasks in flight in tenant 'acme', the server's limit "
            "(maxTasksPerPrincipal 2);"
        )
        assert "--max-tasks-per-principal" in error["message"]
        assert error["data"][0]["metadata"]["count"] == "2"
        listed = (await ann("ListTasks", {}, v1=True))["result"]["tasks"]
        assert len(listed) == 2  # the refused send stored nothing
        # Bob is not held back by Ann's quota.
        assert (await bob("message/send", background("hang")))["result"]["id"]
        # A finished turn gives its slot back.
        canceled = (await ann("tasks/cancel", {"id": first["id"]}))["result"]
        assert canceled["status"]["state"] == "canceled"

        async def ann_may_send() -> bool:
            r = await ann_c.post("/", json=ann.body("message/send", background("hang")))
            return r.status_code == 200

        await wait_for(ann_may_send)


async def test_a_follow_up_refused_by_the_quota_leaves_its_task_as_it_was(
    keys: tuple[Path, dict[str, str]],
) -> None:
    app = keyed_app(keys, max_tasks_per_principal=1)
    async with client_of(app, **bearer(keys, "ann")) as c:
        ann = Rpc(c)
        waiting = (await ann("message/send", msg03("input which?")))["result"]
        assert waiting["status"]["state"] == "input-required"  # not in flight

        async def hang_started() -> bool:  # once the agent's turn has returned
            r = await c.post("/", json=ann.body("message/send", background("hang")))
            return r.status_code == 200

        await wait_for(hang_started)  # in flight: the quota is spent
        r = await c.post("/", json=ann.body("message/send", msg03("blue", taskId=waiting["id"])))
        assert r.status_code == 429
        assert reason(rpc_error(r.json())) == "QUOTA_EXCEEDED"
        after = (await ann("tasks/get", {"id": waiting["id"]}))["result"]
        assert after == waiting
    await app.aclose()


async def test_the_task_quota_over_rest_is_429_with_a_status_body(
    quota_app: A2AApp, keys: tuple[Path, dict[str, str]]
) -> None:
    async with client_of(quota_app, **bearer(keys, "ann"), **V1) as c:

        def send() -> dict[str, Any]:
            return {**message10({"text": "hang"}), "configuration": {"returnImmediately": True}}

        for _ in range(2):
            assert (await c.post("/message:send", json=send())).status_code == 200
        r = await c.post("/message:send", json=send())
        assert r.status_code == 429
        status = r.json()["error"]
        assert status["status"] == "RESOURCE_EXHAUSTED"
        assert status["details"][0]["reason"] == "QUOTA_EXCEEDED"


async def test_streams_per_principal_at_the_limit_pass_and_one_more_is_429(
    keys: tuple[Path, dict[str, str]],
) -> None:
    app = keyed_app(keys, max_streams_per_principal=1)
    with LiveServer(app) as server:
        async with (
            httpx.AsyncClient(base_url=server.url, headers=bearer(keys, "ann")) as ann_c,
            httpx.AsyncClient(base_url=server.url, headers=bearer(keys, "bob")) as bob_c,
        ):
            ann = Rpc(ann_c)
            stream = ann.body("message/stream", msg03("hang"))
            async with ann_c.stream("POST", "/", json=stream) as first:
                assert first.status_code == 200
                assert first.headers["content-type"].startswith("text/event-stream")
                r = await ann_c.post("/", json=ann.body("message/stream", msg03("hang")))
                assert r.status_code == 429
                error = rpc_error(r.json())
                assert reason(error) == "QUOTA_EXCEEDED"
                assert "principal 'ann' has 1 stream open, the server's limit" in error["message"]
                assert "--max-streams-per-principal" in error["message"]
                # Only the first stream's task exists: the refused one stored nothing.
                listed = (await ann("ListTasks", {}, v1=True))["result"]["tasks"]
                assert len(listed) == 1
                # Non-streaming requests and other principals' streams go on.
                assert (await ann("tasks/get", {"id": listed[0]["id"]}))["result"]
                async with bob_c.stream(
                    "POST", "/", json=Rpc(bob_c).body("message/stream", msg03("echo hi"))
                ) as other:
                    assert other.status_code == 200
                    await other.aread()

            async def ann_may_stream() -> bool:
                body = ann.body("message/stream", msg03("echo again"))
                async with ann_c.stream("POST", "/", json=body) as again:
                    await again.aread()
                    return again.status_code == 200

            await wait_for(ann_may_stream)


# --- requests per second ---


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_rate_limit_allows_its_burst_then_429_with_retry_after_then_refills(
    keys: tuple[Path, dict[str, str]],
) -> None:
    clock = Clock()
    app = keyed_app(keys, rate_limit=2.0, rate_burst=3, rate_clock=clock)
    async with (
        client_of(app, **bearer(keys, "ann")) as ann_c,
        client_of(app, **bearer(keys, "bob")) as bob_c,
    ):
        get = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "none"}}
        for _ in range(3):  # the burst: exactly at the limit
            assert (await ann_c.post("/", json=get)).status_code == 200
        r = await ann_c.post("/", json=get)
        assert r.status_code == 429
        assert r.headers["retry-after"] == "1"
        error = rpc_error(r.json())
        assert error["code"] == -32000 and reason(error) == "QUOTA_EXCEEDED"
        assert (
            "principal 'ann' is over the server's rate limit of 2 requests a second"
            in (error["message"])
        )
        assert "--rate-limit" in error["message"]
        rest = await ann_c.get("/tasks", headers=V1)
        assert rest.status_code == 429 and rest.headers["retry-after"] == "1"
        assert rest.json()["error"]["details"][0]["reason"] == "QUOTA_EXCEEDED"
        # Bob has a bucket of his own.
        assert (await bob_c.post("/", json=get)).status_code == 200
        # Half a second at 2 a second is one token back: one request, not two.
        clock.now += 0.5
        assert (await ann_c.post("/", json=get)).status_code == 200
        assert (await ann_c.post("/", json=get)).status_code == 429
        # The agent card is public and never counted.
        assert (await ann_c.get("/.well-known/agent-card.json")).status_code == 200
    await app.aclose()


async def test_anonymous_callers_are_rate_limited_per_remote_address() -> None:
    clock = Clock()
    app = app_with(rate_limit=0.25, rate_clock=clock)
    get = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "none"}}

    def from_address(host: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, client=(host, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://a2ad.test")

    async with from_address("10.0.0.1") as one, from_address("10.0.0.2") as two:
        assert (await one.post("/", json=get)).status_code == 200  # burst: 1
        r = await one.post("/", json=get)
        assert r.status_code == 429
        assert r.headers["retry-after"] == "4"  # a token every 4 s
        assert "address 10.0.0.1" in rpc_error(r.json())["message"]
        assert (await two.post("/", json=get)).status_code == 200
        clock.now += 3.9
        assert (await one.post("/", json=get)).status_code == 429
        clock.now += 0.2
        assert (await one.post("/", json=get)).status_code == 200
    await app.aclose()


def test_limits_defaults_leave_the_per_principal_ones_off() -> None:
    limits = Limits()
    assert (EngineConfig().max_tasks_per_principal, limits.max_streams_per_principal) == (0, 0)
    assert limits.rate_limit == 0
    assert (limits.max_parts, limits.max_part_bytes) == (256, 1024 * 1024)


def test_idle_callers_buckets_are_forgotten_oldest_first_and_their_number_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    limiter = RateLimiter(1.0, 1, clock=lambda: now[0])
    for i in range(10_000):  # each caller spends its one token at t=0
        limiter.take(f"caller-{i}")
    assert len(limiter._buckets) == 10_000
    now[0] = 2.0  # every bucket has refilled: none holds anything a new one would not
    limiter.take("newcomer")
    assert list(limiter._buckets) == ["newcomer"]
    limiter.take("caller-0")  # forgotten, so a fresh bucket: served
    # Callers that never refill: past the hard bound the least recently used go.
    monkeypatch.setattr(limits, "_MAX_BUCKETS", 10_050)
    for i in range(10_100):
        limiter.take(f"busy-{i}")
    assert len(limiter._buckets) <= 10_050
    assert "busy-10099" in limiter._buckets and "busy-0" not in limiter._buckets
