"""A2A 1.0's two streams over gRPC (server/bindings/grpc_service.py), on a real
grpc.aio server on a real port, read with the official SDK's stubs: the events
SSE carries in its order, resumption with ``last-event-id``, a call cancelled by
its client, the caller's stream slots, errors before a stream starts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.rpc import error_details_pb2, status_pb2

from a2ad import A2AApp
from a2ad.assembly import create_app
from a2ad.server.grpc_server import GrpcServer
from a2ad.server.limits import Limits

from ..conftest import wait_for
from ..scripted import ScriptedAgent

V1 = (("a2a-version", "1.0"),)


@pytest.fixture
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture
async def app(agent: ScriptedAgent) -> AsyncIterator[A2AApp]:
    app = create_app(agent, limits=Limits(max_streams_per_principal=2))
    app.engine.shutdown_grace = 0
    await app.lifetime.start()
    try:
        yield app
    finally:
        await app.aclose()


@pytest.fixture
async def stub(app: A2AApp) -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:
    server = GrpcServer(app)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await server.stop(grace=None)


def _send(text: str, message_id: str, **fields: Any) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)], **fields
    )
    return a2a_pb2.SendMessageRequest(message=message)


def _kind(event: a2a_pb2.StreamResponse) -> str:
    payload = event.WhichOneof("payload")
    if payload == "status_update":
        return f"status:{a2a_pb2.TaskState.Name(event.status_update.status.state)}"
    return payload or ""


async def _rest(call: Any) -> list[str]:
    """The kinds of a call's events not yet read, to its end (read, not iterated:
    grpc allows one style a call)."""
    kinds = []
    while (event := await call.read()) is not grpc.aio.EOF:
        kinds.append(_kind(event))
    return kinds


def _event_id(event: a2a_pb2.StreamResponse) -> int:
    payload = getattr(event, event.WhichOneof("payload"))
    return int(payload.metadata["a2ad"]["eventId"])


async def test_a_streamed_message_carries_its_task_then_each_update_in_order(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    call = stub.SendStreamingMessage(_send("chunks 3", "s1"), metadata=V1)
    events = [event async for event in call]
    assert [_kind(e) for e in events] == [
        "task",
        "status:TASK_STATE_WORKING",
        "artifact_update",
        "artifact_update",
        "artifact_update",
        "status:TASK_STATE_COMPLETED",
    ]
    chunks = [e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"]
    assert [c.append for c in chunks] == [False, True, True]
    assert chunks[-1].last_chunk
    assert await call.code() == grpc.StatusCode.OK
    # The trailer names the last event carried: a resubscription starts after it.
    trailers = dict(await call.trailing_metadata())
    task_id = events[0].task.id
    assert all(e.status_update.task_id == task_id for e in events[1:] if e.status_update.task_id)
    assert int(trailers["last-event-id"]) >= len(events) - 1


async def test_a_subscription_cut_off_resumes_after_its_last_event_with_none_missed(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    sent = await stub.SendMessage(_send("input which one?", "r1"), metadata=V1)
    task = sent.task
    assert task.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    first = stub.SubscribeToTask(
        a2a_pb2.SubscribeToTaskRequest(id=task.id), metadata=(*V1, ("a2ad-event-ids", "1"))
    )
    snapshot = await first.read()
    assert snapshot.task.id == task.id
    seen = _event_id(snapshot)
    first.cancel()  # the client's connection is gone; the task waits on
    follow_up = _send("the blue one", "r2", task_id=task.id, context_id=task.context_id)
    answered = await stub.SendMessage(follow_up, metadata=V1)
    assert answered.task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    again = stub.SubscribeToTask(
        a2a_pb2.SubscribeToTaskRequest(id=task.id),
        metadata=(*V1, ("last-event-id", str(seen)), ("a2ad-event-ids", "1")),
    )
    missed = [event async for event in again]
    # Not the task anew: the events after the one it saw, in order, to the end.
    assert [_kind(e) for e in missed] == [
        "status:TASK_STATE_WORKING",
        "artifact_update",
        "status:TASK_STATE_COMPLETED",
    ]
    ids = [_event_id(e) for e in missed]
    assert ids == list(range(seen + 1, seen + 1 + len(missed)))
    assert dict(await again.trailing_metadata())["last-event-id"] == str(ids[-1])


async def test_a_call_its_client_cancels_ends_at_once_and_leaves_the_task_running(
    stub: a2a_pb2_grpc.A2AServiceStub, agent: ScriptedAgent, app: A2AApp
) -> None:
    call = stub.SendStreamingMessage(_send("hang", "h1"), metadata=V1)
    task_id = (await call.read()).task.id
    await wait_for(lambda: task_id in agent.started)
    call.cancel()
    assert await call.code() == grpc.StatusCode.CANCELLED
    # Its stream slot is back (two at most) and the task goes on.
    await wait_for(lambda: app.streams.count("address:127.0.0.1") == 0)
    read = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=V1)
    assert read.status.state == a2a_pb2.TASK_STATE_WORKING
    assert task_id not in agent.cancelled
    canceled = await stub.CancelTask(a2a_pb2.CancelTaskRequest(id=task_id), metadata=V1)
    assert canceled.status.state == a2a_pb2.TASK_STATE_CANCELED


async def test_a_subscriber_sees_the_cancel_end_its_stream(
    stub: a2a_pb2_grpc.A2AServiceStub, agent: ScriptedAgent
) -> None:
    call = stub.SendStreamingMessage(_send("hang", "c1"), metadata=V1)
    task_id = (await call.read()).task.id
    following = stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id=task_id), metadata=V1)
    assert (await following.read()).task.id == task_id
    await stub.CancelTask(a2a_pb2.CancelTaskRequest(id=task_id), metadata=V1)
    assert (await _rest(following))[-1] == "status:TASK_STATE_CANCELED"
    assert (await _rest(call))[-1] == "status:TASK_STATE_CANCELED"


async def test_a_stream_past_the_callers_slots_is_refused_before_it_starts(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    open_calls = [stub.SendStreamingMessage(_send("hang", f"q{i}"), metadata=V1) for i in range(2)]
    for call in open_calls:
        await call.read()
    third = stub.SendStreamingMessage(_send("hang", "q3"), metadata=V1)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await third.read()
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "stream" in (raised.value.details() or "")
    for call in open_calls:
        call.cancel()


async def test_subscribing_to_an_unknown_task_is_not_found_not_a_stream(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    call = stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id="nope"), metadata=V1)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call.read()
    error = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND
    status = status_pb2.Status.FromString(
        dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    )
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")


async def test_a_terminal_tasks_subscription_is_refused_as_over_http(
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    sent = await stub.SendMessage(_send("echo done", "t1"), metadata=V1)
    call = stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id=sent.task.id), metadata=V1)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call.read()
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # UnsupportedOperation


async def test_a_calls_deadline_is_its_turns_when_it_waits_for_the_turn(
    stub: a2a_pb2_grpc.A2AServiceStub, agent: ScriptedAgent
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.SendMessage(_send("hang", "d1", context_id="dl"), metadata=V1, timeout=0.5)
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    listed = await stub.ListTasks(a2a_pb2.ListTasksRequest(context_id="dl"), metadata=V1)
    (task,) = listed.tasks
    assert task.metadata["deadline"]  # the task says the deadline it was given

    async def failed() -> bool:
        read = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task.id), metadata=V1)
        return read.status.state == a2a_pb2.TASK_STATE_FAILED

    await wait_for(failed, timeout=5)
    assert task.id in agent.cancelled  # its agent was stopped, as by a cancel
    # A call that takes the task at once is not held to its call's deadline.
    at_once = _send("hang", "d2", context_id="dl2")
    at_once.configuration.return_immediately = True
    sent = await stub.SendMessage(at_once, metadata=V1, timeout=0.5)
    assert "deadline" not in sent.task.metadata
