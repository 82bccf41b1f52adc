"""An OpenAI-compatible LLM endpoint for tests of the LLM agents: a real HTTP server
on a free port that plays planned replies (a tool call, an answer, an error status,
raw bytes, a hang-up, with or without token usage) and keeps what it was sent; and
the texts of a task such an agent made, read back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2ad import Message, Task

# A status and a JSON body (or raw bytes), or None to hang up without answering.
Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any] | bytes] | None]


class ScriptedLLM:
    """``POST /v1/chat/completions`` answered by ``replies`` in order, each given
    the request; the requests and their headers are kept."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                llm.requests.append(body)
                llm.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions" or not llm.replies:
                    planned = 500, {"error": {"message": f"unplanned {self.path}"}}
                else:
                    planned = llm.replies.pop(0)(body)
                if planned is None:
                    self.close_connection = True
                    return
                status, answer = planned
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def tool_call(name: str, **arguments: Any) -> Reply:
    def reply(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        call = {
            "id": f"call-{len(request['messages'])}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}

    return reply


def answer(text: str) -> Reply:
    def reply(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        message = {"role": "assistant", "content": text}
        return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    return reply


def status(code: int, message: str) -> Reply:
    return lambda request: (code, {"error": {"message": message, "type": "invalid_request"}})


def raw(code: int, body: bytes) -> Reply:
    return lambda request: (code, body)


def hang_up(request: dict[str, Any]) -> None:
    return None


def with_usage(reply: Reply, usage: Any, model: str | None = None) -> Reply:
    """``reply`` with the ``usage`` (and the answering ``model``) an endpoint reports."""

    def counted(request: dict[str, Any]) -> tuple[int, dict[str, Any] | bytes] | None:
        planned = reply(request)
        assert planned is not None and isinstance(planned[1], dict)
        body = {**planned[1], "usage": usage}
        if model is not None:
            body["model"] = model
        return planned[0], body

    return counted


def texts(task: Task) -> list[str]:
    return [m.text for m in task.history]


def status_text(task: Task) -> str:
    message = task.status.message
    assert isinstance(message, Message)
    return message.text
