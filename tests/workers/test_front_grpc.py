"""A front (runs no agents) serving gRPC: a send, a stream and a cancel over
gRPC reach the turn a worker runs, as over HTTP (test_engines.py's pair: a
front engine and a worker's over one PostgreSQL schema)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc

from a2ad.server.app import A2AApp
from a2ad.server.grpc_server import GrpcServer

from ..conftest import wait_for
from ..engine.requests import WAIT
from .test_engines import Pair, pair  # noqa: F401  (the fixture)

V1 = (("a2a-version", "1.0"),)


@pytest.fixture
async def stub(pair: Pair) -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:  # noqa: F811
    server = GrpcServer(A2AApp(pair.front))
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await server.stop(grace=None)


def _send(text: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=f"m-{text}", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def test_grpc_calls_to_a_front_reach_the_turns_a_worker_runs(
    pair: Pair,  # noqa: F811
    stub: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    async with asyncio.timeout(WAIT):
        sent = await stub.SendMessage(_send("echo hello"), metadata=V1)
        assert sent.task.status.state == a2a_pb2.TASK_STATE_COMPLETED
        assert [p.text for p in sent.task.artifacts[0].parts] == ["hello"]
        events = [e async for e in stub.SendStreamingMessage(_send("chunks 2"), metadata=V1)]
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds.count("artifact_update") == 2
        assert events[-1].status_update.status.state == a2a_pb2.TASK_STATE_COMPLETED
        call = stub.SendStreamingMessage(_send("hang"), metadata=V1)
        task_id = (await call.read()).task.id
        await wait_for(lambda: task_id in pair.agent.started)
        canceled = await stub.CancelTask(a2a_pb2.CancelTaskRequest(id=task_id), metadata=V1)
        assert canceled.status.state == a2a_pb2.TASK_STATE_CANCELED
        await wait_for(lambda: task_id in pair.agent.cancelled)  # stopped in the worker
        call.cancel()
