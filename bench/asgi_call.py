"""One request to an ASGI app in-process, and the JSON-RPC bodies the benchmarks
send: no a2ad import, so that a script can drive a build from before today's
package layout (bench/opcodes.py ``--old``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any


async def call(app: Any, body: bytes = b"", *, method: str = "POST", path: str = "/") -> bytes:
    """One request to ``app`` in-process (JSON-RPC by default); its response body."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"a2a-version", b"1.0")],
        "client": ("127.0.0.1", 50000),
    }
    sent = False
    answer: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            answer.append(message.get("body", b""))

    await app(scope, receive, send)
    return b"".join(answer)


def send_body(n: int, text: str = "hello", **configuration: object) -> bytes:
    message = {"role": "ROLE_USER", "messageId": f"m{n}", "parts": [{"text": text}]}
    params: dict[str, object] = {"message": message}
    if configuration:
        params["configuration"] = configuration
    return rpc("SendMessage", params)


def stream_body(n: int) -> bytes:
    message = {"role": "ROLE_USER", "messageId": f"s{n}", "parts": [{"text": "hi"}]}
    return rpc("SendStreamingMessage", {"message": message})


def rpc(method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
