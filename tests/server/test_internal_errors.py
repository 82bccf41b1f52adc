"""The catch-all: a failure nobody planned for answers JSON-RPC -32603 with an
incident id and nothing else of the failure, while the server log has the
traceback under that same id. The failure is a real one: a task store file whose
pages were damaged on disk, so that SQLite reports it malformed.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from pathlib import Path

import httpx
import pytest

from a2ad import (
    A2AApp,
    Message,
    Role,
    SqliteStore,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
    create_app,
)
from a2ad.cli.logs import JsonFormatter

from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .sse_client import Dialect

INCIDENT = re.compile(
    r"^Internal error \(incident ([0-9a-f]{12})\); the server log has the details$"
)


def damage(path: Path, *names: str) -> None:
    """Overwrite the pages of these tables and indexes with garbage, as a bad disk
    or a stray writer would; the file header and the schema stay readable."""
    with sqlite3.connect(path) as conn:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        marks = ",".join("?" * len(names))
        roots = conn.execute(
            f"SELECT rootpage FROM sqlite_schema WHERE name IN ({marks})", names
        ).fetchall()
    conn.close()
    assert len(roots) == len(names)
    with path.open("r+b") as file:
        for (page,) in roots:
            file.seek((page - 1) * page_size)
            file.write(b"\xff" * page_size)


@pytest.fixture
async def damaged(tmp_path: Path) -> Path:
    """A store file holding task "t1", whose table and primary key pages are damaged."""
    path = tmp_path / "tasks.db"
    async with SqliteStore(path) as store:
        await store.create(
            Task(
                id="t1",
                context_id="ctx",
                status=TaskStatus(state=TaskState.SUBMITTED),
                history=[Message(message_id="m1", role=Role.USER, parts=[TextPart("hi")])],
            )
        )
    assert not Path(f"{path}-wal").exists()  # closing checkpointed everything into the file
    damage(path, "tasks", "sqlite_autoindex_tasks_1")
    return path


@pytest.fixture
def app(damaged: Path) -> A2AApp:
    return create_app(ScriptedAgent(), store=SqliteStore(damaged))


def incident_of(response: httpx.Response, request_id: int) -> str:
    """The incident id of a -32603 answer, after checking that the answer is
    exactly that and carries nothing of the failure itself."""
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert set(answer) == {"jsonrpc", "id", "error"} and answer["id"] == request_id
    error = answer["error"]
    assert error["code"] == -32603
    assert error["data"] == [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "INTERNAL_ERROR",
            "domain": "a2a-protocol.org",
        }
    ]
    for internal in ("Traceback", "sqlite", "malformed", "DatabaseError", "tasks.db", ".py"):
        assert internal not in response.text
    match = INCIDENT.match(error["message"])
    assert match, error["message"]
    return match.group(1)


async def test_a_damaged_store_answers_internal_error_with_an_incident_and_logs_the_traceback(
    client: httpx.AsyncClient, d: Dialect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="a2ad.server")
    r = await client.post("/", json=rpc_body(d.method("get"), {"id": "t1"}, 7), headers=d.headers)
    incident = incident_of(r, 7)

    (record,) = [rec for rec in caplog.records if getattr(rec, "incident", None) == incident]
    assert record.exc_info is not None and record.exc_info[0] is sqlite3.DatabaseError
    # What an operator reads: one JSON line with the incident id and the traceback.
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "error" and line["incident"] == incident
    assert line["exc"].startswith("Traceback") and "malformed" in line["exc"]


async def test_each_failure_gets_its_own_incident_and_the_server_keeps_answering(
    client: httpx.AsyncClient, d: Dialect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="a2ad.server")
    first = incident_of(
        await client.post("/", json=rpc_body(d.method("get"), {"id": "t1"}, 1), headers=d.headers),
        1,
    )
    second = incident_of(
        await client.post(
            "/", json=rpc_body(d.method("cancel"), {"id": "t1"}, 2), headers=d.headers
        ),
        2,
    )
    assert first != second
    assert {getattr(rec, "incident", None) for rec in caplog.records} >= {first, second}
    # A request that needs no damaged page is answered as usual. (Even a send whose
    # agent replies with a Message reads the store: was this message sent before?)
    r = await client.get("/.well-known/agent-card.json", headers=d.headers)
    assert r.status_code == 200 and r.json()["name"]


@pytest.mark.parametrize("path", ["/tasks/t1", "/v1/tasks/t1"])
async def test_over_http_json_a_damaged_store_answers_500_with_an_incident(
    client: httpx.AsyncClient, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="a2ad.server")
    r = await client.get(path)
    assert r.status_code == 500
    error = r.json()["error"]
    assert (error["code"], error["status"]) == (500, "INTERNAL")
    assert error["details"][0]["reason"] == "INTERNAL_ERROR"
    for internal in ("Traceback", "sqlite", "malformed", "DatabaseError", "tasks.db", ".py"):
        assert internal not in r.text
    match = INCIDENT.match(error["message"])
    assert match, error["message"]
    assert match.group(1) in {getattr(rec, "incident", None) for rec in caplog.records}
