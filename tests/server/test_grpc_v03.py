"""A2A 0.3's gRPC service (``a2a.v1.A2AService``, server/bindings/grpc_versions.py)
on a real grpc.aio server on a real port, beside 1.0's on the same port: the 0.3
proto's messages and resource names, its TaskSubscription and GetAgentCard,
errors whose message names the error for 0.3 clients, and the official SDK's
0.3 gRPC client on the same tasks as a 1.0 caller."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as grpc03
from a2a.types import a2a_pb2, a2a_pb2_grpc
from a2a.utils.errors import TaskNotFoundError
from google.rpc import error_details_pb2, status_pb2

from a2ad import A2AApp
from a2ad.assembly import create_app
from a2ad.engine.config import EngineConfig
from a2ad.server.grpc_server import GrpcServer

from ..scripted import ScriptedAgent

V03 = (("a2a-version", "0.3"),)


@pytest.fixture
async def served() -> AsyncIterator[tuple[A2AApp, str]]:
    app = create_app(ScriptedAgent(), engine=EngineConfig(allow_private_webhooks=True))
    app.engine.shutdown_grace = 0
    await app.lifetime.start()
    server = GrpcServer(app, base_url="http://a2ad.test:8000")
    await server.start()
    try:
        yield app, server.address
    finally:
        await server.stop(grace=None)
        await app.aclose()


@pytest.fixture
async def channel(served: tuple[A2AApp, str]) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(served[1]) as channel:
        yield channel


def _send(text: str, message_id: str, *, blocking: bool = True) -> pb03.SendMessageRequest:
    message = pb03.Message(
        message_id=message_id, role=pb03.ROLE_USER, content=[pb03.Part(text=text)]
    )
    return pb03.SendMessageRequest(
        request=message, configuration=pb03.SendMessageConfiguration(blocking=blocking)
    )


def _details(error: grpc.aio.AioRpcError) -> tuple[str, list[str]]:
    """The ErrorInfo reason and the BadRequest fields of a call's status."""
    status = status_pb2.Status.FromString(
        dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    )
    assert (status.code, status.message) == (error.code().value[0], error.details())
    reason, fields = "", []
    for detail in status.details:
        info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
        if detail.Unpack(info):
            reason = info.reason
        elif detail.Unpack(bad):
            fields = [v.field for v in bad.field_violations]
    return reason, fields


async def test_a_03_message_is_a_task_read_canceled_and_followed_by_resource_name(
    channel: grpc.aio.Channel,
) -> None:
    stub = grpc03.A2AServiceStub(channel)
    sent = await stub.SendMessage(_send("echo hello", "m1"), metadata=V03)
    task = sent.task
    assert task.status.state == pb03.TASK_STATE_COMPLETED
    assert [p.text for p in task.artifacts[0].parts] == ["hello"]
    read = await stub.GetTask(pb03.GetTaskRequest(name=f"tasks/{task.id}", history_length=1))
    assert (read.id, read.context_id, len(read.history)) == (task.id, task.context_id, 1)
    waiting = (await stub.SendMessage(_send("hang", "m2", blocking=False), metadata=V03)).task
    following = stub.TaskSubscription(pb03.TaskSubscriptionRequest(name=f"tasks/{waiting.id}"))
    assert (await following.read()).task.id == waiting.id
    canceled = await stub.CancelTask(pb03.CancelTaskRequest(name=f"tasks/{waiting.id}"))
    assert canceled.status.state == pb03.TASK_STATE_CANCELLED
    events = []
    while (event := await following.read()) is not grpc.aio.EOF:
        events.append(event)
    assert events[-1].status_update.status.state == pb03.TASK_STATE_CANCELLED
    assert events[-1].status_update.final


async def test_a_03_stream_says_final_on_its_last_status_update(channel: grpc.aio.Channel) -> None:
    stub = grpc03.A2AServiceStub(channel)
    events = [event async for event in stub.SendStreamingMessage(_send("chunks 2", "s1"))]
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds == ["task", "status_update", "artifact_update", "artifact_update", "status_update"]
    assert [e.status_update.final for e in events if e.HasField("status_update")] == [False, True]
    replies = [e async for e in stub.SendStreamingMessage(_send("reply hi there", "s2"))]
    assert [e.WhichOneof("payload") for e in replies] == ["msg"]
    assert replies[0].msg.content[0].text == "hi there"


async def test_a_03_error_names_itself_in_its_message_and_carries_error_info(
    channel: grpc.aio.Channel,
) -> None:
    stub = grpc03.A2AServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.GetTask(pb03.GetTaskRequest(name="tasks/nope"))
    error = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert (error.details() or "").startswith("TaskNotFoundError: ")
    assert "nope" in (error.details() or "")
    assert _details(error)[0] == "TASK_NOT_FOUND"
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.GetTask(pb03.GetTaskRequest(name="jobs/nope"))
    error = raised.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("InvalidParamsError: `name` must be tasks/{id}")
    assert _details(error) == ("INVALID_PARAMS", ["name"])
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.GetTask(pb03.GetTaskRequest(name="tasks/x"), metadata=(("a2a-version", "1.0"),))
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "lf.a2a.v1.A2AService (A2A 1.0)" in (raised.value.details() or "")


async def test_push_configs_by_resource_name(channel: grpc.aio.Channel) -> None:
    stub = grpc03.A2AServiceStub(channel)
    task = (await stub.SendMessage(_send("input which?", "p1"))).task
    parent = f"tasks/{task.id}"
    config = pb03.TaskPushNotificationConfig(
        push_notification_config=pb03.PushNotificationConfig(
            id="hook-1", url="https://hooks.example.com/a2a", token="t0k"
        )
    )
    created = await stub.CreateTaskPushNotificationConfig(
        pb03.CreateTaskPushNotificationConfigRequest(
            parent=parent, config_id="hook-1", config=config
        )
    )
    name = f"{parent}/pushNotificationConfigs/hook-1"
    assert created.name == name
    assert created.push_notification_config.url == "https://hooks.example.com/a2a"
    got = await stub.GetTaskPushNotificationConfig(
        pb03.GetTaskPushNotificationConfigRequest(name=name)
    )
    assert got.push_notification_config.id == "hook-1"
    listed = await stub.ListTaskPushNotificationConfig(
        pb03.ListTaskPushNotificationConfigRequest(parent=parent)
    )
    assert [c.name for c in listed.configs] == [name]
    await stub.DeleteTaskPushNotificationConfig(
        pb03.DeleteTaskPushNotificationConfigRequest(name=name)
    )
    listed = await stub.ListTaskPushNotificationConfig(
        pb03.ListTaskPushNotificationConfigRequest(parent=parent)
    )
    assert list(listed.configs) == []


async def test_get_agent_card_is_the_03_card_with_every_interface(
    channel: grpc.aio.Channel, served: tuple[A2AApp, str]
) -> None:
    card = await grpc03.A2AServiceStub(channel).GetAgentCard(pb03.GetAgentCardRequest())
    assert card.name == "scripted"
    assert card.protocol_version == "0.3.0"
    assert (card.url, card.preferred_transport) == ("http://a2ad.test:8000/", "JSONRPC")
    assert card.capabilities.streaming


async def test_the_sdks_03_grpc_client_and_a_10_caller_meet_on_the_same_task(
    channel: grpc.aio.Channel, served: tuple[A2AApp, str]
) -> None:
    address = served[1]
    card = a2a_pb2.AgentCard(
        name="scripted",
        supported_interfaces=[
            a2a_pb2.AgentInterface(url=address, protocol_binding="GRPC", protocol_version="0.3")
        ],
    )
    config = ClientConfig(
        streaming=False,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=["GRPC"],
    )
    client = ClientFactory(config).create(card)
    try:
        message = a2a_pb2.Message(
            message_id="c1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="echo both")]
        )
        answers = [
            a async for a in client.send_message(a2a_pb2.SendMessageRequest(message=message))
        ]
        task = answers[-1].task
        assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
        with pytest.raises(TaskNotFoundError):
            await client.get_task(a2a_pb2.GetTaskRequest(id="nope"))
    finally:
        await client.close()
    # The task a 0.3 caller made, read by a 1.0 caller on the other service.
    stub = a2a_pb2_grpc.A2AServiceStub(channel)
    read = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task.id))
    assert read.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert [p.text for p in read.artifacts[0].parts] == ["both"]
