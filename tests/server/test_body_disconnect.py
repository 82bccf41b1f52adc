"""A client that leaves before its request body ends gets nothing done: half a
body is never decoded and acted on (JSON-RPC and REST alike)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from a2ad import create_app

FULL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
).encode()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/", FULL),
        ("/message:send", json.dumps(json.loads(FULL)["params"]).encode()),
    ],
)
async def test_a_body_cut_by_a_disconnect_is_not_acted_on(path: str, body: bytes) -> None:
    app = create_app()
    # Cut where the rest still parses as JSON would not matter: the first half is
    # sent, then the client is gone.
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": body[: len(body) // 2], "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(b"a2a-version", b"1.0"), (b"content-type", b"application/json")],
    }
    await app(scope, receive, send)
    assert sent == []  # no one to answer
    assert (await app.store.list_tasks()) == []
    await app.aclose()
