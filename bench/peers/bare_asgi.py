"""A bare ASGI app: the ceiling for a Python A2A server on this machine (bench/load.py's peer).

It reads the JSON-RPC body, parses it with ``json``, and answers with a canned result
of the size an echo agent's would be (a Task for SendMessage / GetTask / CancelTask,
a 50-task page for ListTasks, four SSE events for SendStreamingMessage). No tasks are
kept and no agent runs: what is left is uvicorn, the body read, one ``json.loads``
and the write. SubscribeToTask is not supported (it has no tasks to follow).

    .venv/bin/python -m uvicorn --app-dir bench/peers bare_asgi:app --port 8002
"""

from __future__ import annotations

import json
from typing import Any

_TASK_ID = "d85c347a-10e5-48e6-88a1-c1a5b42341fb"
_CONTEXT_ID = "a8ee8010-6f2b-46e1-a73e-33e8450f3546"
_STAMP = "2026-11-30T11:14:01.518Z"


def _task(state: str, *, artifacts: bool = True, text: str = "hello") -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": _TASK_ID,
        "contextId": _CONTEXT_ID,
        "status": {"state": state, "timestamp": _STAMP},
    }
    if artifacts:
        task["artifacts"] = [
            {
                "artifactId": "c6c80aba-a17f-4e74-a106-f446687658a6",
                "parts": [{"text": text}],
                "name": "echo",
            }
        ]
    task["history"] = [
        {
            "messageId": "bench-00000000-0000000",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            "contextId": _CONTEXT_ID,
            "taskId": _TASK_ID,
        }
    ]
    return task


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


_COMPLETED = _dump({"task": _task("TASK_STATE_COMPLETED")})
_SUBMITTED = _dump({"task": _task("TASK_STATE_SUBMITTED", artifacts=False, text="sleep:30 x")})
_GOT = _dump(_task("TASK_STATE_COMPLETED"))
_CANCELED = _dump(_task("TASK_STATE_CANCELED", artifacts=False, text="sleep:30 x"))
_LISTED = _dump(_task("TASK_STATE_COMPLETED", artifacts=False))
_STREAM = [
    _dump({"task": _task("TASK_STATE_SUBMITTED", artifacts=False)}),
    _dump(
        {
            "statusUpdate": {
                "taskId": _TASK_ID,
                "contextId": _CONTEXT_ID,
                "status": {"state": "TASK_STATE_WORKING", "timestamp": _STAMP},
            }
        }
    ),
    _dump(
        {
            "artifactUpdate": {
                "taskId": _TASK_ID,
                "contextId": _CONTEXT_ID,
                "artifact": _task("TASK_STATE_COMPLETED")["artifacts"][0],
            }
        }
    ),
    _dump(
        {
            "statusUpdate": {
                "taskId": _TASK_ID,
                "contextId": _CONTEXT_ID,
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": _STAMP},
            }
        }
    ),
]
_CARD = _dump(
    {
        "name": "bare",
        "description": "canned answers",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "version": "1.0.0",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
)
_UNSUPPORTED = b'{"code":-32004,"message":"not supported by the bare peer"}'
_NOT_FOUND = b'{"code":-32601,"message":"Method not found"}'


def _envelope(request_id: Any, key: bytes, value: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"%s":%s}' % (_dump(request_id), key, value)


def _answer(request: dict[str, Any]) -> bytes | list[bytes]:
    method = request.get("method")
    params = request.get("params") or {}
    rid = request.get("id")
    if method == "SendMessage":
        quick = (params.get("configuration") or {}).get("returnImmediately")
        return _envelope(rid, b"result", _SUBMITTED if quick else _COMPLETED)
    if method == "GetTask":
        return _envelope(rid, b"result", _GOT)
    if method == "CancelTask":
        return _envelope(rid, b"result", _CANCELED)
    if method == "ListTasks":
        size = min(int(params.get("pageSize") or 50), 100)
        page = b'{"tasks":[%s],"nextPageToken":"%s","pageSize":%d,"totalSize":100}' % (
            b",".join([_LISTED] * size),
            b"x" * 40,
            size,
        )
        return _envelope(rid, b"result", page)
    if method == "SendStreamingMessage":
        return [_envelope(rid, b"result", event) for event in _STREAM]
    if method == "SubscribeToTask":
        return _envelope(rid, b"error", _UNSUPPORTED)
    return _envelope(rid, b"error", _NOT_FOUND)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["method"] == "GET":
        await _respond(send, _CARD)
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = _answer(json.loads(body))
    if isinstance(answer, bytes):
        await _respond(send, answer)
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    for seq, event in enumerate(answer):
        frame = b"id: %d\ndata: %s\n\n" % (seq, event)
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _respond(send: Any, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
