"""A2A over gRPC as the binding-equivalence suite (test_bindings.py) drives it:
the official SDK's stubs of ``lf.a2a.v1.A2AService`` (1.0) and of
``a2a.v1.A2AService`` (0.3, ``GrpcBinding03``: tasks named ``tasks/{id}``, no
ListTasks), whose decoding of each answer's bytes into the SDK's types is the
wire's oracle, with
check_grpc_answer (no field the proto lacks, REQUIRED fields) and
assert_grpc_error (the spec's status code, the google.rpc.Status trailer) on
top. Answers are turned to ProtoJSON, the shape 1.0's JSON bindings carry, and
reduced to summaries (summaries.py) as theirs are.

``grpc_beside`` serves a LiveServer's app over gRPC in the event loop that serves
it over HTTP, as ``a2ad serve --grpc-port`` does: the bindings share its tasks,
agents and streams.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import grpc.aio
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as grpc03
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from a2ad.server.grpc_server import GrpcServer

from ..conftest import LiveServer
from .oracles import assert_grpc_error, check_grpc_answer
from .summaries import Failed, Summary, event_summary, message_summary, task_summary

__all__ = ["GrpcBinding", "GrpcBinding03", "grpc_beside"]

TIMEOUT = 10.0  # every call's deadline: a hung call fails, it does not stall the suite
V1 = (("a2a-version", "1.0"),)
# A TaskState the enum lacks. A ListTasks filter is an enum over gRPC: it has no
# spelling of its own, so where JSON sends a word the spec lacks ("sleeping"), gRPC
# sends a number the enum lacks (proto3 enums are open: it arrives as such).
UNKNOWN_STATE = 99


@contextmanager
def grpc_beside(live: LiveServer) -> Iterator[str]:
    """A GrpcServer for ``live``'s app, started in the loop uvicorn serves it in
    (where the app's lifespan opened its store, engine and bus, which a call
    awaits); yields its address."""
    loop = live.server.servers[0].get_loop()
    server = GrpcServer(live.app)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(TIMEOUT)
    try:
        yield server.address
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(grace=None), loop).result(TIMEOUT)


def _state(word: str) -> int:
    """A ListTasks status filter as the enum's number: ``TASK_STATE_FAILED``
    and ``failed`` alike (an enum has one spelling), UNKNOWN_STATE for a word
    that names no state."""
    name = word if word.startswith("TASK_STATE_") else f"TASK_STATE_{word.upper()}"
    name = name.replace("-", "_")
    return a2a_pb2.TaskState.Value(name) if name in a2a_pb2.TaskState.keys() else UNKNOWN_STATE


def _json(message: ProtoMessage) -> dict[str, Any]:
    """A checked answer as ProtoJSON, what the 1.0 JSON bindings carry."""
    check_grpc_answer(message)
    return json_format.MessageToDict(message)


def _refused(error: grpc.aio.AioRpcError) -> Failed:
    info = assert_grpc_error(error.code(), error.details(), error.trailing_metadata())
    return Failed(info.reason)


async def _answer(call: Awaitable[Any]) -> Any:
    """A unary call's answer, or the Failed its refusal is."""
    try:
        return await call
    except grpc.aio.AioRpcError as exc:
        return _refused(exc)


def _sent(answer: Any) -> Summary:
    """A SendMessage's answer (either version's) as its summary."""
    if isinstance(answer, Failed):
        return answer
    result = _json(answer)
    if "message" in result:
        return ("message", message_summary(result["message"]))
    return {"id": answer.task.id, **task_summary(result["task"])}


def _task(answer: Any) -> Summary:
    return answer if isinstance(answer, Failed) else task_summary(_json(answer))


class GrpcBinding:
    """A2A 1.0 over gRPC on ``channel``; every call says ``a2a-version: 1.0``,
    as the 1.0 JSON bindings' requests say ``A2A-Version: 1.0``."""

    name = "gRPC 1.0"

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = a2a_pb2_grpc.A2AServiceStub(channel)

    def _send_request(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        immediately: bool = False,
    ) -> a2a_pb2.SendMessageRequest:
        message = a2a_pb2.Message(
            message_id=str(uuid.uuid4()),
            role=a2a_pb2.ROLE_USER,
            parts=[a2a_pb2.Part(text=text)],
            context_id=context_id or "",
            task_id=task_id or "",
        )
        request = a2a_pb2.SendMessageRequest(message=message)
        if immediately:
            request.configuration.return_immediately = True
        return request

    async def send(self, text: str, **how: Any) -> Summary:
        request = self._send_request(text, **how)
        return _sent(await _answer(self.stub.SendMessage(request, metadata=V1, timeout=TIMEOUT)))

    async def get(self, task_id: str, **query: Any) -> Summary:
        request = json_format.ParseDict({"id": task_id, **query}, a2a_pb2.GetTaskRequest())
        return _task(await _answer(self.stub.GetTask(request, metadata=V1, timeout=TIMEOUT)))

    async def cancel(self, task_id: str) -> Summary:
        request = a2a_pb2.CancelTaskRequest(id=task_id)
        return _task(await _answer(self.stub.CancelTask(request, metadata=V1, timeout=TIMEOUT)))

    async def list(self, **query: Any) -> Summary:
        status = query.pop("status", None)
        request = json_format.ParseDict(query, a2a_pb2.ListTasksRequest())
        if status is not None:
            request.status = _state(status)
        try:
            page = await self.stub.ListTasks(request, metadata=V1, timeout=TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            return _refused(exc)
        # A protobuf message has all four fields, zero or not: none can be absent
        # as a JSON member can (the JSON bindings check that they are there).
        return {
            "tasks": sorted((task_summary(_json(t)) for t in page.tasks), key=json.dumps),
            "totalSize": page.total_size,
            "pageSize": page.page_size,
            "more": bool(page.next_page_token),
        }

    async def stream(self, text: str, **how: Any) -> Summary:
        request = self._send_request(text, **how)
        return await self._events(
            self.stub.SendStreamingMessage(request, metadata=V1, timeout=TIMEOUT)
        )

    async def subscribe(self, task_id: str, last_event_id: int | None = None) -> Summary:
        metadata = V1 if last_event_id is None else (*V1, ("last-event-id", str(last_event_id)))
        request = a2a_pb2.SubscribeToTaskRequest(id=task_id)
        return await self._events(
            self.stub.SubscribeToTask(request, metadata=metadata, timeout=TIMEOUT)
        )

    async def _events(self, call: Any) -> Summary:
        """A stream's events to its end, or the error that refused it; an error
        after some events fails (no scenario cuts a stream short)."""
        items = []
        try:
            async for event in call:
                items.append(_json(event))
        except grpc.aio.AioRpcError as exc:
            assert not items, f"the stream was cut after {len(items)} events: {exc}"
            return _refused(exc)
        assert await call.code() == grpc.StatusCode.OK
        return [event_summary(item) for item in items]


V03 = (("a2a-version", "0.3"),)


class GrpcBinding03:
    """A2A 0.3 over gRPC on ``channel``: its proto's messages, tasks named by
    resource; every call says ``a2a-version: 0.3``. 0.3 has no ListTasks rpc,
    so the listing scenarios leave it out (``lists``); its GetTask can't ask for
    no history (``asks_no_history``: ``history_length`` 0 is "not set" there)."""

    name = "gRPC 0.3"
    lists = False
    asks_no_history = False

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = grpc03.A2AServiceStub(channel)

    def _send_request(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        immediately: bool = False,
    ) -> pb03.SendMessageRequest:
        message = pb03.Message(
            message_id=str(uuid.uuid4()),
            role=pb03.ROLE_USER,
            content=[pb03.Part(text=text)],
            context_id=context_id or "",
            task_id=task_id or "",
        )
        # The 0.3 proto's `blocking` is a plain bool: absent is false.
        configuration = pb03.SendMessageConfiguration(blocking=not immediately)
        return pb03.SendMessageRequest(request=message, configuration=configuration)

    async def send(self, text: str, **how: Any) -> Summary:
        request = self._send_request(text, **how)
        return _sent(await _answer(self.stub.SendMessage(request, metadata=V03, timeout=TIMEOUT)))

    async def get(self, task_id: str, **query: Any) -> Summary:
        request = pb03.GetTaskRequest(
            name=f"tasks/{task_id}", history_length=query.get("historyLength", 0)
        )
        return _task(await _answer(self.stub.GetTask(request, metadata=V03, timeout=TIMEOUT)))

    async def cancel(self, task_id: str) -> Summary:
        request = pb03.CancelTaskRequest(name=f"tasks/{task_id}")
        return _task(await _answer(self.stub.CancelTask(request, metadata=V03, timeout=TIMEOUT)))

    async def list(self, **query: Any) -> Summary:
        raise AssertionError("A2A 0.3's gRPC service has no ListTasks")

    async def stream(self, text: str, **how: Any) -> Summary:
        request = self._send_request(text, **how)
        call = self.stub.SendStreamingMessage(request, metadata=V03, timeout=TIMEOUT)
        return await GrpcBinding._events(self, call)  # type: ignore[arg-type]

    async def subscribe(self, task_id: str, last_event_id: int | None = None) -> Summary:
        metadata = V03 if last_event_id is None else (*V03, ("last-event-id", str(last_event_id)))
        request = pb03.TaskSubscriptionRequest(name=f"tasks/{task_id}")
        call = self.stub.TaskSubscription(request, metadata=metadata, timeout=TIMEOUT)
        return await GrpcBinding._events(self, call)  # type: ignore[arg-type]
