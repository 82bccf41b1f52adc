"""Internal parts over gRPC, as over HTTP (test_internal_parts.py): a plain
caller gets none of the agent's internal parts from a send, a get or a stream,
in either version's service; an operator gets them all. A real grpc.aio
server, real API keys in the call metadata."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as grpc03
from a2a.types import a2a_pb2, a2a_pb2_grpc

from a2ad import create_app
from a2ad.server import auth
from a2ad.server.auth import ApiKeys, CredentialAuthenticator
from a2ad.server.grpc_server import GrpcServer

from .test_internal_parts import SECRET, ToolAgent


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[grpc.aio.Channel, str, str]]:
    keys = tmp_path / "keys.toml"
    ann = auth.add_key(str(keys), "ann", tenants=["acme"])
    olga = auth.add_key(str(keys), "olga", tenants=["acme"], roles=["operator"])
    app = create_app(
        ToolAgent(), authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(keys)))
    )
    await app.lifetime.start()
    server = GrpcServer(app)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            yield channel, ann, olga
    finally:
        await server.stop(grace=None)
        await app.aclose()


def _send() -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id="m1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="go")]
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def test_a_plain_caller_gets_no_internal_part_and_an_operator_gets_them_all(
    served: tuple[grpc.aio.Channel, str, str],
) -> None:
    channel, ann, olga = served
    stub = a2a_pb2_grpc.A2AServiceStub(channel)
    as_ann = (("x-api-key", ann), ("a2a-version", "1.0"))
    sent = await stub.SendMessage(_send(), metadata=as_ann)
    task_id = sent.task.id
    read = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=as_ann)
    events = [e async for e in stub.SendStreamingMessage(_send(), metadata=as_ann)]
    for shown in (sent, read, *events):
        assert SECRET not in str(shown)
    assert "the answer" in str(read) and "Looking it up" in str(read)
    as_olga = (("x-api-key", olga), ("a2a-version", "1.0"))
    whole = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=as_olga)
    for secret in ("query", "hits", "thought", "scratch", "why"):
        assert f"{SECRET} {secret}" in str(whole)
    # The 0.3 service hides them as well.
    old = await grpc03.A2AServiceStub(channel).GetTask(
        pb03.GetTaskRequest(name=f"tasks/{task_id}"), metadata=(("x-api-key", ann),)
    )
    assert SECRET not in str(old) and "the answer" in str(old)
