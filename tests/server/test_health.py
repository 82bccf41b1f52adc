"""``/healthz`` and ``/readyz`` (server/health.py), and the request record every
observer reads (server/observed.py), through the app with a real SQLite store."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx

from a2ad import Agent, ApiKeys, CredentialAuthenticator, create_app
from a2ad.agent import TaskContext
from a2ad.engine.config import EngineConfig
from a2ad.server import auth
from a2ad.server.observed import RequestRecord
from a2ad.server.types import Scope
from a2ad.settings import Observability
from a2ad.store.sqlite import SqliteStore

V1 = {"A2A-Version": "1.0"}


class Waits(Agent):
    """Runs until it is stopped, so that a shutdown has something to wait for."""

    name = "waits"

    async def run(self, ctx: TaskContext) -> None:
        await asyncio.Event().wait()


def _send(text: str, *, blocking: bool = True) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            },
            "configuration": {"returnImmediately": not blocking},
        },
    }


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test")


async def test_ready_while_the_store_answers_and_not_once_it_is_closed(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "tasks.db"))
    app = create_app(store=store)
    await app.engine.start()
    async with _client(app) as http:
        live = await http.get("/healthz")
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        ready = await http.get("/readyz")
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert ready.headers["cache-control"] == "no-store"
        await store.aclose()
        unready = await http.get("/readyz")
        assert unready.status_code == 503
        assert unready.json()["status"] == "unready"
        assert "task store failed" in unready.json()["reason"]
        assert "closed" in unready.json()["reason"]
        assert (await http.get("/healthz")).status_code == 200  # alive, just not ready
    await app.aclose()


async def test_unready_during_shutdown_while_tasks_finish(tmp_path: Path) -> None:
    app = create_app(
        Waits(),
        store=SqliteStore(str(tmp_path / "tasks.db")),
        engine=EngineConfig(shutdown_grace=30),
    )
    await app.engine.start()
    async with _client(app) as http:
        sent = await http.post("/", json=_send("wait", blocking=False), headers=V1)
        assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
        assert (await http.get("/readyz")).status_code == 200
        stopping = app.begin_shutdown()  # the running task holds the grace open
        await asyncio.sleep(0.05)
        assert not stopping.done()
        unready = await http.get("/readyz")
        assert unready.status_code == 503
        assert unready.json() == {"status": "unready", "reason": "the server is shutting down"}
        assert (await http.get("/healthz")).status_code == 200
        app.begin_shutdown(graceful=False)
        await stopping
    await app.aclose()


async def test_probes_need_no_credential_and_take_only_get(tmp_path: Path) -> None:
    path = str(tmp_path / "keys.toml")
    auth.add_key(path, "ann", tenants=["acme"])
    app = create_app(authenticator=CredentialAuthenticator(keys=ApiKeys.load(path)))
    async with _client(app) as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/readyz")).status_code == 200
        assert (await http.get("/tasks", headers=V1)).status_code == 401
        posted = await http.post("/readyz")
        assert posted.status_code == 405
        assert posted.headers["allow"] == "GET, HEAD"
    await app.aclose()


class Notes:
    """An observer that keeps what it was told."""

    def __init__(self) -> None:
        self.began: list[str] = []
        self.ended: list[RequestRecord] = []

    def began_(self, record: RequestRecord, scope: Scope) -> str:
        self.began.append(record.path)
        return record.path

    def ended_(self, record: RequestRecord, token: Any) -> None:
        assert token == record.path
        self.ended.append(record)


async def test_observers_see_each_requests_binding_method_status_and_code(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "keys.toml")
    key = auth.add_key(path, "ann", tenants=["acme"])
    notes = Notes()
    observer = type("Observer", (), {"began": notes.began_, "ended": notes.ended_})
    app = create_app(
        authenticator=CredentialAuthenticator(keys=ApiKeys.load(path)),
        observability=Observability(observers=(observer(),)),
    )
    signed = {**V1, "Authorization": f"Bearer {key}"}
    async with _client(app) as http:
        await http.post("/", json=_send("hi"), headers=signed)
        await http.get("/tasks/nope", headers=signed)
        await http.get("/v1/tasks/nope", headers={"Authorization": f"Bearer {key}"})
        await http.get("/tasks", headers=V1)  # no credential
        await http.get("/.well-known/agent-card.json")
        await http.get("/healthz")
        await http.get("/no/such/path", headers=signed)
    await app.aclose()
    seen = [(r.binding, r.method, r.version, r.status, r.code) for r in notes.ended]
    assert seen == [
        ("JSONRPC", "SendMessage", "1.0", 200, None),
        ("HTTP+JSON", "GetTask", "1.0", 404, -32001),
        ("HTTP+JSON", "GetTask", "0.3", 404, -32001),
        ("HTTP+JSON", "", "", 401, -31401),
        ("card", "", "", 200, None),
        ("health", "", "", 200, None),
        ("HTTP+JSON", "", "", 404, -32601),
    ]
    assert notes.began == [r.path for r in notes.ended]
    assert notes.ended[1].task_id == "nope"
    assert all(r.started > 0 for r in notes.ended)
