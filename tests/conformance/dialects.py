"""The two wire dialects of a2ad, as a client that checks every answer it reads.

``WireDialect("1.0")`` speaks A2A 1.0 (``A2A-Version: 1.0``), ``WireDialect("0.3")``
speaks 0.3 (no header). Each knows its method names, how a message, a text part, a
role and a state are spelled, and how a send result is read (1.0 wraps it in
``{"task": ...}`` or ``{"message": ...}``, 0.3 tags it with ``kind``). Every result
it hands back has been through the oracle of its version first: parse_v1 for 1.0,
the 0.3 JSON Schema for 0.3. Errors go through oracles.assert_error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from a2a.types import ListTasksResponse, SendMessageResponse, Task, TaskState

from ..conftest import Rpc, msg03, msg10
from .oracles import assert_error, parse_v1, validate_03

__all__ = ["V03", "V10", "WireDialect", "result_of"]

_METHODS = {
    "send": ("SendMessage", "message/send"),
    "get": ("GetTask", "tasks/get"),
    "cancel": ("CancelTask", "tasks/cancel"),
    "list": ("ListTasks", "tasks/list"),
}

# Spelled out rather than derived from the 0.3 word, so a test that compares a
# state with d.state(...) checks the 1.0 enum name itself.
_STATES_10 = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "canceled": "TASK_STATE_CANCELED",
    "failed": "TASK_STATE_FAILED",
    "rejected": "TASK_STATE_REJECTED",
}
_ROLES_10 = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}


def result_of(body: dict[str, Any]) -> Any:
    """The ``result`` of a JSON-RPC response, failing (and showing it) if it is an error."""
    assert "error" not in body, f"unexpected error: {json.dumps(body)[:800]}"
    assert body.get("jsonrpc") == "2.0", body
    return body["result"]


@dataclass(frozen=True)
class WireDialect:
    version: str

    def __post_init__(self) -> None:
        if self.version not in ("1.0", "0.3"):
            raise ValueError(f"a2ad speaks 1.0 and 0.3, not {self.version!r}")

    @property
    def v1(self) -> bool:
        return self.version == "1.0"

    # --- spelling ---

    def method(self, op: str) -> str:
        """The method name of ``op`` (send, get, cancel, list) in this dialect."""
        v10, v03 = _METHODS[op]
        return v10 if self.v1 else v03

    def message(self, text: str, **extra: Any) -> dict[str, Any]:
        """A user message with one text part: for 1.0 complete with a messageId, for
        0.3 the short form 0.3 clients send (no messageId, no part kind)."""
        return (msg10 if self.v1 else msg03)(text, **extra)["message"]  # type: ignore[no-any-return]

    def text_part(self, text: str) -> dict[str, Any]:
        """A text part as a2ad writes it."""
        return {"text": text} if self.v1 else {"kind": "text", "text": text}

    def texts(self, message: dict[str, Any]) -> list[str]:
        if self.v1:
            return [p["text"] for p in message["parts"] if "text" in p]
        return [p["text"] for p in message["parts"] if p.get("kind") == "text"]

    def role(self, word: str) -> str:
        """``user`` or ``agent`` in this dialect."""
        spelled = _ROLES_10[word]  # a KeyError in either dialect for a word that is no role
        return spelled if self.v1 else word

    def state(self, word: str) -> str:
        """A task state, given in its 0.3 spelling (``input-required``), in this dialect."""
        spelled = _STATES_10[word]  # a KeyError in either dialect for a word that is no state
        return spelled if self.v1 else word

    @property
    def return_immediately(self) -> dict[str, Any]:
        """The send configuration that asks for the task before it ends."""
        return {"returnImmediately": True} if self.v1 else {"blocking": False}

    # --- calls ---

    async def call(self, rpc: Rpc, op: str, params: Any) -> dict[str, Any]:
        """The raw response body of ``op``, unchecked (for tests expecting an error)."""
        return await rpc(self.method(op), params, v1=self.v1)

    def error(
        self, body: dict[str, Any], code: int, *, reason: str | None = None
    ) -> dict[str, Any]:
        """The error object of ``body``, checked by oracles.assert_error."""
        return assert_error(body, code, reason=reason, dialect=self.version)

    async def send(self, rpc: Rpc, message: str | dict[str, Any], **params: Any) -> dict[str, Any]:
        """The result of sending ``message`` (a text, or a message object) with the
        other send ``params``, as on the wire: read it with task_of or message_of."""
        msg = self.message(message) if isinstance(message, str) else message
        body = await self.call(rpc, "send", {"message": msg, **params})
        if self.v1:
            result = result_of(body)
            proto: SendMessageResponse = parse_v1(result, SendMessageResponse)
            assert set(result) == {proto.WhichOneof("payload")}, result
            if "task" in result:
                self._check_state_v1(result["task"], proto.task)
            return result  # type: ignore[no-any-return]
        validate_03(body, "SendMessageSuccessResponse")
        return result_of(body)  # type: ignore[no-any-return]

    def task_of(self, result: dict[str, Any]) -> dict[str, Any]:
        """The Task a send result carries, failing if it is a message."""
        if self.v1:
            assert set(result) == {"task"}, result
            return result["task"]  # type: ignore[no-any-return]
        assert result.get("kind") == "task", result
        return validate_03(result, "Task")  # type: ignore[no-any-return]

    def message_of(self, result: dict[str, Any]) -> dict[str, Any]:
        """The Message a send result carries, failing if it is a task."""
        if self.v1:
            assert set(result) == {"message"}, result
            return result["message"]  # type: ignore[no-any-return]
        assert result.get("kind") == "message", result
        return validate_03(result, "Message")  # type: ignore[no-any-return]

    async def send_task(
        self, rpc: Rpc, message: str | dict[str, Any], **params: Any
    ) -> dict[str, Any]:
        return self.task_of(await self.send(rpc, message, **params))

    async def get(self, rpc: Rpc, task_id: str, **params: Any) -> dict[str, Any]:
        body = await self.call(rpc, "get", {"id": task_id, **params})
        return self._task(body, "GetTaskSuccessResponse")

    async def cancel(self, rpc: Rpc, task_id: str) -> dict[str, Any]:
        body = await self.call(rpc, "cancel", {"id": task_id})
        return self._task(body, "CancelTaskSuccessResponse")

    async def list_tasks(self, rpc: Rpc, **params: Any) -> dict[str, Any]:
        page = result_of(await self.call(rpc, "list", params))
        if self.v1:
            proto: ListTasksResponse = parse_v1(page, ListTasksResponse)
            for task, task_proto in zip(page["tasks"], proto.tasks, strict=True):
                self._check_state_v1(task, task_proto)
            return page  # type: ignore[no-any-return]
        # tasks/list is not in the 0.3 schema: a2ad answers with the 1.0 page shape
        # holding 0.3 Tasks.
        assert set(page) == {"tasks", "nextPageToken", "pageSize", "totalSize"}, page
        assert isinstance(page["nextPageToken"], str)
        assert isinstance(page["pageSize"], int) and isinstance(page["totalSize"], int)
        for task in page["tasks"]:
            assert task.get("kind") == "task", task
            validate_03(task, "Task")
        return page  # type: ignore[no-any-return]

    def _task(self, body: dict[str, Any], response_03: str) -> dict[str, Any]:
        """The Task result of a get or cancel response, checked (``response_03`` names
        the 0.3 schema definition of the whole response)."""
        if self.v1:
            task = result_of(body)
            self._check_state_v1(task, parse_v1(task, Task))
            return task  # type: ignore[no-any-return]
        validate_03(body, response_03)
        return validate_03(result_of(body), "Task")  # type: ignore[no-any-return]

    @staticmethod
    def _check_state_v1(task: dict[str, Any], proto: Task) -> None:
        # The parsed enum must be the one the JSON names, so a state compared as a
        # string is also the state a 1.0 SDK reads.
        assert TaskState.Name(proto.status.state) == task["status"]["state"], task


V10 = WireDialect("1.0")
V03 = WireDialect("0.3")
