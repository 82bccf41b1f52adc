"""A2A 1.0's unary rpcs over gRPC (server/bindings/grpc_service.py), on a real
grpc.aio server on a real port, called by the official SDK's stubs and client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2, a2a_pb2_grpc
from a2a.utils.errors import TaskNotFoundError
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2, status_pb2

from a2ad.assembly import create_app
from a2ad.server.grpc_server import GrpcServer

from ..scripted import ScriptedAgent


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Any]]:
    """The address of a gRPC server answering for a fresh app, and the app."""
    app = create_app(ScriptedAgent())
    await app.lifetime.start()
    server = GrpcServer(app)
    await server.start()
    try:
        yield server.address, app
    finally:
        await server.stop(grace=None)
        await app.aclose()


@pytest.fixture
async def stub(served: tuple[str, Any]) -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:
    """The official SDK's stub of A2A 1.0's service, on a channel to ``served``."""
    async with grpc.aio.insecure_channel(served[0]) as channel:
        yield a2a_pb2_grpc.A2AServiceStub(channel)


def _text(message_id: str, text: str) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )


async def test_a_message_sent_over_grpc_is_answered_with_its_task_which_get_task_reads(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    sent = await stub.SendMessage(a2a_pb2.SendMessageRequest(message=_text("m1", "hello")))
    task = sent.task
    assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert [p.text for p in task.artifacts[0].parts] == ["hello"]
    read = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task.id))
    assert (read.id, read.context_id, read.status.state) == (
        task.id,
        task.context_id,
        a2a_pb2.TASK_STATE_COMPLETED,
    )
    listed = await stub.ListTasks(a2a_pb2.ListTasksRequest(context_id=task.context_id))
    assert [t.id for t in listed.tasks] == [task.id]


async def test_an_unknown_task_is_not_found_with_its_error_info_in_the_status(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.GetTask(a2a_pb2.GetTaskRequest(id="nope"))
    error = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "nope" in (error.details() or "")
    trailer = dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(trailer)
    assert (status.code, status.message) == (error.code().value[0], error.details())
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")


async def test_a_terminal_tasks_cancel_is_a_failed_precondition(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    sent = await stub.SendMessage(a2a_pb2.SendMessageRequest(message=_text("m2", "done")))
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.CancelTask(a2a_pb2.CancelTaskRequest(id=sent.task.id))
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_the_official_sdks_grpc_client_gets_tasks_and_reads_our_errors(
    served: tuple[str, Any],
) -> None:
    address, _ = served
    card = a2a_pb2.AgentCard(
        name="scripted",
        supported_interfaces=[
            a2a_pb2.AgentInterface(url=address, protocol_binding="GRPC", protocol_version="1.0")
        ],
    )
    config = ClientConfig(
        streaming=False,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=["GRPC"],
    )
    client = ClientFactory(config).create(card)
    try:
        answers = [
            a
            async for a in client.send_message(
                a2a_pb2.SendMessageRequest(message=_text("m3", "from the sdk"))
            )
        ]
        task = answers[-1].task
        assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
        read = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
        assert read.id == task.id
        with pytest.raises(TaskNotFoundError):
            await client.get_task(a2a_pb2.GetTaskRequest(id="nope"))
    finally:
        await client.close()


async def test_whole_numbers_in_a_data_part_are_stored_as_the_caller_wrote_them(
    stub: a2a_pb2_grpc.A2AServiceStub, served: tuple[str, Any]
) -> None:
    # A Struct keeps numbers as doubles: {"n": 1} crosses gRPC as 1.0, and
    # must not be stored (and answered over JSON-RPC) so.
    data = struct_pb2.Struct()
    data.update({"n": 1, "half": 0.5, "xs": [2, 3]})
    message = a2a_pb2.Message(
        message_id="d1",
        role=a2a_pb2.ROLE_USER,
        parts=[
            a2a_pb2.Part(text="echo data"),
            a2a_pb2.Part(data=struct_pb2.Value(struct_value=data)),
        ],
    )
    sent = await stub.SendMessage(a2a_pb2.SendMessageRequest(message=message))
    _, app = served
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": sent.task.id}}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        answer = await http.post("/", json=body, headers={"A2A-Version": "1.0"})
    data = answer.json()["result"]["history"][0]["parts"][1]["data"]
    assert data == {"n": 1, "half": 0.5, "xs": [2, 3]}
    assert [type(v) for v in (data["n"], data["half"], *data["xs"])] == [int, float, int, int]
