"""JSON-RPC and HTTP+JSON, in A2A 1.0 and 0.3, as the binding-equivalence suite
(test_bindings.py) drives them: a small client per binding and version that
reads every answer through the oracle of its wire (parse_v1 for 1.0, the 0.3
JSON Schema for 0.3 JSON-RPC, the 0.3 proto for 0.3 HTTP+JSON) and reduces it
to a summary (summaries.py).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.types import ListTasksResponse, SendMessageResponse, StreamResponse, Task

from ..jsonrpc import rpc_body
from ..server.sse_client import frames
from .oracles import assert_error, assert_status, parse_03_rest, parse_v1, validate_03
from .summaries import Failed, Summary, event_summary, message_summary, task_summary

__all__ = ["HttpBinding"]


@dataclass(frozen=True)
class HttpBinding:
    """JSON-RPC (``rest`` false) or HTTP+JSON in ``version`` ("1.0" or "0.3"),
    over ``http``, a client of the server's URL."""

    rest: bool
    version: str
    http: httpx.AsyncClient

    @property
    def name(self) -> str:
        return f"{'HTTP+JSON' if self.rest else 'JSON-RPC'} {self.version}"

    @property
    def v1(self) -> bool:
        return self.version == "1.0"

    # --- requests ---

    def _message(self, text: str, context_id: str | None, task_id: str | None) -> dict[str, Any]:
        ids: dict[str, str] = {"messageId": str(uuid.uuid4())}
        if context_id:
            ids["contextId"] = context_id
        if task_id:
            ids["taskId"] = task_id
        if self.v1:
            return {"role": "ROLE_USER", "parts": [{"text": text}], **ids}
        if self.rest:
            return {"role": "ROLE_USER", "content": [{"text": text}], **ids}
        return {"role": "user", "parts": [{"kind": "text", "text": text}], **ids}

    def _send_params(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        immediately: bool = False,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"message": self._message(text, context_id, task_id)}
        if immediately:
            params["configuration"] = (
                {"returnImmediately": True} if self.v1 else {"blocking": False}
            )
        return params

    def _rpc(self, op: str, params: Any) -> dict[str, Any]:
        names = {
            "send": ("SendMessage", "message/send"),
            "stream": ("SendStreamingMessage", "message/stream"),
            "get": ("GetTask", "tasks/get"),
            "list": ("ListTasks", "tasks/list"),
            "cancel": ("CancelTask", "tasks/cancel"),
            "subscribe": ("SubscribeToTask", "tasks/resubscribe"),
        }[op]
        method = names[0] if self.v1 else names[1]
        return rpc_body(method, params)

    @property
    def _headers(self) -> dict[str, str]:
        return {"A2A-Version": "1.0"} if self.v1 else {}

    def _path(self, path: str) -> str:
        return path if self.v1 else "/v1" + path

    async def _unary(self, op: str, params: dict[str, Any], rest: tuple[str, str]) -> Any:
        """The result JSON, or Failed; ``rest`` is (HTTP method, path)."""
        if self.rest:
            method, path = rest
            query = {k: v for k, v in params.items() if method == "GET" and k != "id"}
            body = params if method == "POST" and op == "send" else None
            r = await self.http.request(
                method, self._path(path), json=body, params=_query(query), headers=self._headers
            )
            if r.status_code != 200:
                return Failed(assert_status(r.status_code, r.json())["reason"])
            return r.json()
        r = await self.http.post("/", json=self._rpc(op, params), headers=self._headers)
        assert r.status_code == 200, r.text
        answer = r.json()
        if "error" in answer:
            error = assert_error(answer, answer["error"]["code"], dialect=self.version)
            return Failed(error["data"][0]["reason"])
        return answer["result"]

    # --- operations, each answering a Summary ---

    async def send(self, text: str, **how: Any) -> Summary:
        result = await self._unary(
            "send", self._send_params(text, **how), ("POST", "/message:send")
        )
        if isinstance(result, Failed):
            return result
        if self.v1:
            parse_v1(result, SendMessageResponse)
        elif self.rest:
            parse_03_rest(result, pb03.SendMessageResponse)
        else:
            validate_03(result, "Task" if result.get("kind") == "task" else "Message")
        if "message" in result or result.get("kind") == "message":
            return ("message", message_summary(result.get("message", result)))
        return {"id": result.get("task", result)["id"], **self._checked(result.get("task", result))}

    def _checked(self, task: dict[str, Any]) -> Summary:
        if self.v1:
            parse_v1(task, Task)
        elif self.rest:
            parse_03_rest(task, pb03.Task)
        else:
            validate_03(task, "Task")
        return task_summary(task)

    async def get(self, task_id: str, **query: Any) -> Summary:
        result = await self._unary("get", {"id": task_id, **query}, ("GET", f"/tasks/{task_id}"))
        return result if isinstance(result, Failed) else self._checked(result)

    async def cancel(self, task_id: str) -> Summary:
        result = await self._unary("cancel", {"id": task_id}, ("POST", f"/tasks/{task_id}:cancel"))
        return result if isinstance(result, Failed) else self._checked(result)

    async def list(self, **query: Any) -> Summary:
        page = await self._unary("list", query, ("GET", "/tasks"))
        if isinstance(page, Failed):
            return page
        if self.v1:
            parse_v1(page, ListTasksResponse)
        assert set(page) == {"tasks", "nextPageToken", "pageSize", "totalSize"}, page
        return {
            "tasks": sorted((task_summary(t) for t in page["tasks"]), key=json.dumps),
            "totalSize": page["totalSize"],
            "pageSize": page["pageSize"],
            "more": bool(page["nextPageToken"]),
        }

    async def stream(self, text: str, **how: Any) -> Summary:
        params = self._send_params(text, **how)
        if self.rest:
            return await self._sse("POST", self._path("/message:stream"), json=params)
        return await self._sse("POST", "/", json=self._rpc("stream", params))

    async def subscribe(self, task_id: str, last_event_id: int | None = None) -> Summary:
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        if self.rest:
            return await self._sse(
                "GET", self._path(f"/tasks/{task_id}:subscribe"), headers=headers
            )
        body = self._rpc("subscribe", {"id": task_id})
        return await self._sse("POST", "/", json=body, headers=headers)

    async def _sse(self, method: str, path: str, **kwargs: Any) -> Summary:
        headers = {**self._headers, **kwargs.pop("headers", {})}
        async with self.http.stream(method, path, headers=headers, **kwargs) as r:
            if not r.headers["content-type"].startswith("text/event-stream"):
                await r.aread()
                if self.rest:
                    return Failed(assert_status(r.status_code, r.json())["reason"])
                error = assert_error(r.json(), r.json()["error"]["code"], dialect=self.version)
                return Failed(error["data"][0]["reason"])
            items = [self._stream_item(f.data) async for f in frames(r)]
        return [event_summary(item) for item in items]

    def _stream_item(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.v1:
            item = data if self.rest else data["result"]
            parse_v1(item, StreamResponse)
            return item  # type: ignore[no-any-return]
        if self.rest:
            parse_03_rest(data, pb03.StreamResponse)
            return data
        validate_03(data, "SendStreamingMessageSuccessResponse")
        return data["result"]  # type: ignore[no-any-return]


def _query(values: dict[str, Any]) -> dict[str, str]:
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in values.items()}
