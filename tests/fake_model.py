"""An OpenAI-compatible chat-completions server on loopback, for agents and
framework adapters that need a model: ``POST /v1/chat/completions`` (plain or
``"stream": true``, server-sent events as OpenAI sends them) and
``GET /v1/models``. Each request takes the next scripted ``Turn`` (the last one
repeats): text, or tool calls, with the token usage reported. Requests are kept
for the test to read, and so is the time (``time.monotonic()``) of each client
that hung up on a stream before its end (``disconnects``). A real HTTP server
(uvicorn), not a mock of a client.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .threaded_server import ThreadedServer

__all__ = ["FakeModel", "ToolCallTurn", "Turn"]

MODEL = "fake-model"


@dataclass
class ToolCallTurn:
    """One tool call: the function's name and its arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass
class Turn:
    """One reply: ``text`` (streamed in ``chunks`` pieces, ``chunk_delay``
    seconds apart), or ``tool_calls``; ``delay`` seconds before the first byte
    (to test a cancel); ``status`` other than 200 answers an error body instead;
    ``raw`` is sent as the whole body of a 200 stream instead (a broken endpoint)."""

    text: str = ""
    tool_calls: list[ToolCallTurn] = field(default_factory=list)
    chunks: int = 3
    delay: float = 0.0
    chunk_delay: float = 0.0
    status: int = 200
    prompt_tokens: int = 11
    completion_tokens: int = 7
    raw: bytes = b""


class FakeModel:
    def __init__(self, turns: list[Turn] | None = None) -> None:
        self.turns = list(turns or [Turn(text="Hello from the fake model.")])
        self.requests: list[dict[str, Any]] = []
        self.disconnects: list[float] = []
        self._lock = threading.Lock()
        self._served = ThreadedServer(self._app, what="the fake model", interface="asgi3")
        self.url = f"http://127.0.0.1:{self._served.port}/v1"

    def __enter__(self) -> FakeModel:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()

    def _next(self) -> Turn:
        with self._lock:
            return self.turns.pop(0) if len(self.turns) > 1 else self.turns[0]

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"].endswith("/models"):
            await _json(send, 200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            return
        if not scope["path"].endswith("/chat/completions"):
            await _json(send, 404, {"error": {"message": f"no route {scope['path']}"}})
            return
        request = json.loads(body or b"{}")
        with self._lock:
            self.requests.append(request)
        turn = self._next()
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if turn.status != 200:
            error = {"error": {"message": f"fake failure {turn.status}", "type": "server_error"}}
            await _json(send, turn.status, error)
            return
        model = request.get("model") or MODEL
        if request.get("stream"):
            # The stream ends early when the client hangs up: uvicorn then drops what is sent.
            streamer = asyncio.create_task(self._stream(send, receive, turn, model, request))
            watcher = asyncio.create_task(self._watch(receive, streamer))
            try:
                await asyncio.wait({watcher, streamer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (watcher, streamer):
                    task.cancel()
                await asyncio.gather(watcher, streamer, return_exceptions=True)
        else:
            await _json(send, 200, _completion(turn, model))

    async def _watch(self, receive: Any, streamer: asyncio.Task[None]) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if not streamer.done():  # not the end of a stream sent whole
            with self._lock:
                self.disconnects.append(time.monotonic())

    async def _stream(
        self, send: Any, receive: Any, turn: Turn, model: str, request: dict[str, Any]
    ) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        if turn.raw:
            await send({"type": "http.response.body", "body": turn.raw})
            return
        ident, created = "chatcmpl-fake", int(time.time())

        async def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            chunk = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            data = f"data: {json.dumps(chunk)}\n\n".encode()
            await send({"type": "http.response.body", "body": data, "more_body": True})

        await event({"role": "assistant", "content": ""})
        if turn.tool_calls:
            for i, call in enumerate(turn.tool_calls):
                await event(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": f"call_{i}",
                                "type": "function",
                                "function": {
                                    "name": call.name,
                                    "arguments": json.dumps(call.arguments),
                                },
                            }
                        ]
                    }
                )
            finish = "tool_calls"
        else:
            for piece in _pieces(turn.text, turn.chunks):
                await event({"content": piece})
                await asyncio.sleep(
                    turn.chunk_delay or (turn.delay / max(1, turn.chunks) if turn.delay else 0)
                )
            finish = "stop"
        usage = _usage(turn)
        include_usage = (request.get("stream_options") or {}).get("include_usage")
        await event({}, finish, **({} if include_usage else {"usage": usage}))
        if include_usage:
            chunk = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": usage,
            }
            data = f"data: {json.dumps(chunk)}\n\n".encode()
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(turn: Turn) -> dict[str, int]:
    return {
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
    }


def _completion(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for i, c in enumerate(turn.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.tool_calls else "stop",
            }
        ],
        "usage": _usage(turn),
    }


async def _json(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": data})
