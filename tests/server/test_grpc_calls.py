"""Who a gRPC call is from and what it is for (server/bindings/grpc_call.py): the
credential in its metadata proved as over HTTP, before anything is looked up;
another's task not found; ``a2ad-agent`` naming the agent; ``a2a-version``
checked; the rate limit; the access log and metrics told of every call, with
its binding. A real grpc.aio server on a real port, the official SDK's stubs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.rpc import error_details_pb2, status_pb2

from a2ad import A2AApp, ApiKeys, CredentialAuthenticator
from a2ad.assembly import create_app
from a2ad.server import auth
from a2ad.server.grpc_server import GrpcServer
from a2ad.server.limits import Limits
from a2ad.server.metrics import Metrics
from a2ad.settings import Observability

from ..scripted import ScriptedAgent

Stub = a2a_pb2_grpc.A2AServiceStub


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.toml"


@pytest.fixture
def alice(keys_file: Path) -> tuple[tuple[str, str], ...]:
    key = auth.add_key(str(keys_file), "alice")
    return (("authorization", f"Bearer {key}"), ("a2a-version", "1.0"))


@pytest.fixture
def bob(keys_file: Path, alice: object) -> tuple[tuple[str, str], ...]:
    return (("x-api-key", auth.add_key(str(keys_file), "bob")), ("a2a-version", "1.0"))


@pytest.fixture
async def app(keys_file: Path, bob: object) -> AsyncIterator[A2AApp]:
    keys = ApiKeys.load(str(keys_file))
    app = create_app(
        {"first": ScriptedAgent(), "second": ScriptedAgent()},
        authenticator=CredentialAuthenticator(keys=keys),
        limits=Limits(rate_limit=0.5, rate_burst=30),
        observability=Observability(metrics=Metrics(), request_log=True, access_log=1.0),
    )
    await app.lifetime.start()
    try:
        yield app
    finally:
        await app.aclose()


@pytest.fixture
async def stub(app: A2AApp) -> AsyncIterator[Stub]:
    server = GrpcServer(app)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await server.stop(grace=None)


def _send(text: str, message_id: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )
    return a2a_pb2.SendMessageRequest(message=message)


def _reason(error: grpc.aio.AioRpcError) -> str:
    status = status_pb2.Status.FromString(
        dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    )
    assert (status.code, status.message) == (error.code().value[0], error.details())
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info.reason


async def _refused(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call  # type: ignore[misc]
    return raised.value


async def test_a_call_without_a_credential_is_unauthenticated_before_any_lookup(
    stub: Stub,
) -> None:
    error = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id="anything")))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert _reason(error) == "UNAUTHENTICATED"
    assert "Authorization: Bearer" in (error.details() or "")
    # An unknown agent is not named to a caller who proved nothing.
    error = await _refused(
        stub.GetTask(a2a_pb2.GetTaskRequest(id="x"), metadata=(("a2ad-agent", "nobody"),))
    )
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    bad = (("authorization", "Bearer not-a-key"),)
    error = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id="x"), metadata=bad))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_anothers_task_is_not_found_as_a_task_that_never_was(
    stub: Stub,
    alice: tuple[tuple[str, str], ...],
    bob: tuple[tuple[str, str], ...],
) -> None:
    sent = await stub.SendMessage(_send("echo mine", "a1"), metadata=alice)
    task_id = sent.task.id
    read = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=alice)
    assert read.status.state == a2a_pb2.TASK_STATE_COMPLETED
    theirs = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=bob))
    never = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id="never-was"), metadata=bob))
    assert theirs.code() == never.code() == grpc.StatusCode.NOT_FOUND
    assert _reason(theirs) == _reason(never) == "TASK_NOT_FOUND"
    assert theirs.details().replace(task_id, "ID") == never.details().replace("never-was", "ID")
    listed = await stub.ListTasks(a2a_pb2.ListTasksRequest(), metadata=bob)
    assert task_id not in [t.id for t in listed.tasks]


async def test_a2ad_agent_names_the_agent_and_an_unknown_one_is_listed_against_the_others(
    stub: Stub, alice: tuple[tuple[str, str], ...]
) -> None:
    to_second = (*alice, ("a2ad-agent", "second"))
    sent = await stub.SendMessage(_send("echo there", "g1"), metadata=to_second)
    task_id = sent.task.id
    assert (await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=to_second)).id
    # A task belongs to the agent it was sent to: the one at / does not have it.
    error = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=alice))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    unknown = (*alice, ("a2ad-agent", "third"))
    error = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=unknown))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "third" in error.details() and "first, second" in error.details()


async def test_a_version_other_than_the_services_is_refused_naming_it(
    stub: Stub, alice: tuple[tuple[str, str], ...]
) -> None:
    old = (alice[0], ("a2a-version", "0.3"))
    error = await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id="x"), metadata=old))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION  # the 1.0.1 table
    assert _reason(error) == "VERSION_NOT_SUPPORTED"
    assert "0.3" in error.details() and "lf.a2a.v1.A2AService" in error.details()
    # No a2a-version at all: the service's own, 1.0.
    sent = await stub.SendMessage(_send("echo v", "v1"), metadata=(alice[0],))
    assert sent.task.status.state == a2a_pb2.TASK_STATE_COMPLETED


async def test_the_rate_limit_holds_for_grpc_calls_too(
    stub: Stub, bob: tuple[tuple[str, str], ...]
) -> None:
    codes = []
    for _ in range(40):
        try:
            await stub.ListTasks(a2a_pb2.ListTasksRequest(), metadata=bob)
            codes.append(grpc.StatusCode.OK)
        except grpc.aio.AioRpcError as exc:
            codes.append(exc.code())
            assert _reason(exc) == "QUOTA_EXCEEDED"
    assert codes[:30] == [grpc.StatusCode.OK] * 30
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes[30:]


async def test_every_call_has_its_access_line_and_its_metrics_with_the_grpc_binding(
    stub: Stub,
    app: A2AApp,
    alice: tuple[tuple[str, str], ...],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="a2ad.access"):
        metadata = (*alice, ("x-request-id", "req-grpc-1"))
        await _refused(stub.GetTask(a2a_pb2.GetTaskRequest(id="nope"), metadata=metadata))
    lines = [r for r in caplog.records if getattr(r, "request_id", "") == "req-grpc-1"]
    assert len(lines) == 1
    line = lines[0]
    assert (line.binding, line.method, line.code, line.principal) == (  # type: ignore[attr-defined]
        "GRPC",
        "GetTask",
        -32001,
        "alice",
    )
    assert line.path == "/lf.a2a.v1.A2AService/GetTask"  # type: ignore[attr-defined]
    assert app.metrics is not None
    scraped = (await app.metrics.render()).decode()
    assert 'a2ad_requests_total{binding="GRPC",code="-32001",method="GetTask"} 1.0' in scraped
