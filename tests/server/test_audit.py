"""The audit trail: every cancel and every refused request is one structured
line (logger a2ad.audit) with principal, tenant, task id and reason; an auth
failure one line too (a2ad.auth); none holds the credential."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import create_app
from a2ad.cli.logs import JsonFormatter
from a2ad.engine.config import EngineConfig
from a2ad.server import auth
from a2ad.server.auth import ApiKeys, CredentialAuthenticator
from a2ad.server.limits import Limits

from ..conftest import V1, msg10
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent


@pytest.fixture
def ann_key(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "keys.toml"
    return path, auth.add_key(str(path), "ann", tenants=["acme"])


@pytest.fixture
async def http(ann_key: tuple[Path, str]) -> AsyncIterator[httpx.AsyncClient]:
    path, key = ann_key
    app = create_app(
        ScriptedAgent(),
        authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(path))),
        engine=EngineConfig(shutdown_grace=0),
        limits=Limits(max_body_bytes=4096),
    )
    transport = httpx.ASGITransport(app=app, client=("10.9.8.7", 5555))
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://a2ad.test", headers=headers
    ) as c:
        yield c
    await app.aclose()


def lines(caplog: pytest.LogCaptureFixture, logger: str = "a2ad.audit") -> list[dict[str, Any]]:
    formatter = JsonFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == logger]


async def test_a_cancel_is_one_line_naming_who_and_which_task(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2ad.audit")
    params = {**msg10("hang"), "configuration": {"returnImmediately": True}}
    sent = (await http.post("/", json=rpc_body("SendMessage", params), headers=V1)).json()
    task_id = sent["result"]["task"]["id"]
    canceled = await http.post("/", json=rpc_body("CancelTask", {"id": task_id}), headers=V1)
    assert "result" in canceled.json()
    (line,) = [x for x in lines(caplog) if x["event"] == "canceled"]
    assert (line["principal"], line["tenant"], line["task_id"]) == ("ann", "acme", task_id)
    assert line["binding"] == "JSONRPC"


@pytest.mark.parametrize("binding", ["JSON-RPC", "REST"])
async def test_a_refused_request_is_one_line_with_its_reason(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, binding: str
) -> None:
    caplog.set_level(logging.INFO, logger="a2ad.audit")
    missing = str(uuid.uuid4())
    if binding == "JSON-RPC":
        r = await http.post("/", json=rpc_body("GetTask", {"id": missing}), headers=V1)
        assert r.json()["error"]["code"] == -32001
    else:
        r = await http.get(f"/tasks/{missing}", headers=V1)
        assert r.status_code == 404
    (line,) = lines(caplog)
    assert line["event"] == "refused" and line["reason"] == "TASK_NOT_FOUND"
    assert (line["principal"], line["tenant"], line["task_id"]) == ("ann", "acme", missing)
    assert line["code"] == -32001 and line["remote"] == "10.9.8.7:5555"


async def test_a_foreign_tenant_a_body_too_large_and_an_unknown_path_are_refusals(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2ad.audit")
    params = {**msg10("echo x"), "tenant": "globex"}
    await http.post("/", json=rpc_body("SendMessage", params), headers=V1)
    assert (await http.post("/", content=b"x" * 5000, headers=V1)).status_code == 413
    assert (await http.get("/no/such/path", headers=V1)).status_code == 404
    reasons = [(x["reason"], x["tenant"]) for x in lines(caplog)]
    assert reasons == [
        ("PERMISSION_DENIED", "globex"),
        ("INVALID_REQUEST", "acme"),
        ("METHOD_NOT_FOUND", "acme"),
    ]


async def test_no_audit_line_holds_the_credential(
    http: httpx.AsyncClient, ann_key: tuple[Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _, key = ann_key
    wrong = "a2ad_" + "x" * 43
    r = await http.post(
        "/",
        json=rpc_body("GetTask", {"id": "t"}),
        headers={**V1, "Authorization": f"Bearer {wrong}"},
    )
    assert r.status_code == 401
    await http.post("/", json=rpc_body("GetTask", {"id": "t"}), headers=V1)
    (failed,) = lines(caplog, "a2ad.auth")
    assert failed["event"] == "auth_failed"
    written = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    assert key not in written and wrong not in written
    assert len(lines(caplog)) == 1  # the refused GetTask
