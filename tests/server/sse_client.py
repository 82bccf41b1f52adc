"""A strict little SSE reader for the streaming tests.

It parses frames itself (rather than trusting a client library) so the tests can
check what goes over the wire: every ``data:`` is one line holding one complete
JSON document, and the ``id:`` line of the frame it belongs to.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

V1 = {"A2A-Version": "1.0"}


@dataclass(frozen=True)
class Frame:
    id: int | None
    data: dict[str, Any]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.data, self.data
        return self.data["result"]  # type: ignore[no-any-return]


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The frames of an SSE response, until the server closes it."""
    event_id: int | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                assert len(data) == 1, f"one data line per event, got {len(data)}"
                yield Frame(event_id, json.loads(data[0]))
            event_id, data = None, []
        elif line.startswith(":"):
            continue  # keep-alive comment
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event_id = int(value)
            elif field == "data":
                data.append(value)
    assert not data, "the stream ended in the middle of an event"


async def collect(response: httpx.Response) -> list[Frame]:
    return [f async for f in frames(response)]


def kind(result: dict[str, Any], v1: bool) -> str:
    """task / message / status / artifact, in either dialect."""
    if v1:
        (key,) = result.keys()
        return {
            "task": "task",
            "message": "message",
            "statusUpdate": "status",
            "artifactUpdate": "artifact",
        }[key]
    return {
        "task": "task",
        "message": "message",
        "status-update": "status",
        "artifact-update": "artifact",
    }[result["kind"]]


def body(result: dict[str, Any], v1: bool) -> dict[str, Any]:
    """The event object itself (1.0 wraps it in a one-key object; 0.3 does not)."""
    if v1:
        (value,) = result.values()
        return value  # type: ignore[no-any-return]
    return result


def state(result: dict[str, Any], v1: bool) -> str:
    """The task state a task or status event carries, in 0.3 spelling."""
    b = body(result, v1)
    s = b["status"]["state"]
    if v1:
        return s.removeprefix("TASK_STATE_").lower().replace("_", "-")  # type: ignore[no-any-return]
    return s  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Dialect:
    v1: bool

    @property
    def version(self) -> str:
        return "1.0" if self.v1 else "0.3"

    @property
    def headers(self) -> dict[str, str]:
        return {"A2A-Version": "1.0"} if self.v1 else {}

    def method(self, op: str) -> str:
        names = {
            "send": ("SendMessage", "message/send"),
            "stream": ("SendStreamingMessage", "message/stream"),
            "subscribe": ("SubscribeToTask", "tasks/resubscribe"),
            "cancel": ("CancelTask", "tasks/cancel"),
            "get": ("GetTask", "tasks/get"),
        }[op]
        return names[0] if self.v1 else names[1]

    def message(self, text: str, *, immediately: bool = False, **extra: Any) -> dict[str, Any]:
        role = "ROLE_USER" if self.v1 else "user"
        part = {"text": text} if self.v1 else {"kind": "text", "text": text}
        params: dict[str, Any] = {
            "message": {"messageId": str(uuid.uuid4()), "role": role, "parts": [part], **extra}
        }
        if immediately:
            params["configuration"] = (
                {"returnImmediately": True} if self.v1 else {"blocking": False}
            )
        return params

    def task_of(self, result: dict[str, Any]) -> dict[str, Any]:
        """The Task in a send/get result (1.0 send wraps it in ``task``)."""
        return result["task"] if self.v1 and "task" in result else result

    def state_word(self, task: dict[str, Any]) -> str:
        s: str = task["status"]["state"]
        return s.removeprefix("TASK_STATE_").lower().replace("_", "-") if self.v1 else s
