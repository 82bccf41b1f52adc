"""a2ad.Client over gRPC in A2A 0.3 (``a2a.v1.A2AService``, the 0.3 proto's):
against a2ad's own gRPC listener on a real port in this process, which serves
0.3's service beside 1.0's, and against the official SDK's gRPC server serving
its 0.3 compat handler.

The operations give what they give over JSON-RPC 0.3, every part kind comes
back as sent, subscribe resumes with ``last-event-id``, errors are the classes
and messages JSON-RPC 0.3 raises (from the ErrorInfo, or from the message's
``Name:`` when the server sends none), ListTasks, which 0.3's service lacks,
is refused, and ``binding="grpc"`` takes the card's 0.3 interface when it
offers no 1.0 one."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc
from a2a.compat.v0_3.grpc_handler import CompatGrpcHandler
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

from a2ad import (
    A2AApp,
    Client,
    ClientError,
    DataPart,
    FilePart,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TextPart,
    create_app,
)
from a2ad.assembly import assemble
from a2ad.client.grpc_transport import GrpcAddress, card_grpc_address
from a2ad.protocol.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2ad.server.card import Interface
from a2ad.server.grpc_server import GrpcServer
from a2ad.settings import AppSettings

from ..conftest import SDK_PEER, free_port, wait_for
from ..scripted import ScriptedAgent
from .test_client_grpc import started, words


@pytest.fixture
async def app(agent: ScriptedAgent) -> AsyncIterator[A2AApp]:
    app = await started(create_app(agent))
    try:
        yield app
    finally:
        await app.aclose()


@pytest.fixture
async def server(app: A2AApp) -> AsyncIterator[GrpcServer]:
    server = GrpcServer(app)
    await server.start()
    try:
        yield server
    finally:
        await server.stop(grace=None)


@pytest.fixture
async def client(server: GrpcServer) -> AsyncIterator[Client]:
    async with Client(f"grpc://{server.address}", version="0.3") as c:
        yield c


@pytest.fixture
async def json_rpc(app: A2AApp) -> AsyncIterator[Client]:
    """The same app over JSON-RPC 0.3 (in process), to hold gRPC's answers up to."""
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
        Client("http://a2ad.test", version="0.3", http=http) as c,
    ):
        yield c


# --- against a2ad's gRPC listener ---


async def test_a_grpc_url_with_version_0_3_speaks_0_3_there(
    client: Client, server: GrpcServer
) -> None:
    assert client.binding == "grpc" and await client.version() == "0.3"
    async with Client(f"grpc://{server.address}") as default:
        assert await default.version() == "1.0"  # a gRPC URL alone still means 1.0


async def test_send_waits_for_the_task_to_end(client: Client) -> None:
    task = await client.send("echo hello")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == ["hello"]
    assert task.history[0].parts[0].text == "echo hello"


async def test_every_part_kind_the_agent_makes_comes_back_as_over_json_rpc(
    client: Client, json_rpc: Client
) -> None:
    task = await client.send("parts")
    assert isinstance(task, Task)
    parts = {a.name: a.parts[0] for a in task.artifacts}
    assert parts["data"].data == {"n": 1, "xs": [1, 2]}
    assert parts["raw"].raw == b"\x00\x01bytes" and parts["raw"].filename == "b.bin"
    assert parts["url"].url == "https://example.com/f.pdf"
    assert parts["url"].media_type == "application/pdf"
    assert await json_rpc.get_task(task.id) == await client.get_task(task.id)


async def test_a_message_of_every_part_kind_reaches_the_server_as_sent(
    client: Client, json_rpc: Client
) -> None:
    sent = Message(
        message_id="m-every-kind",
        role=Role.USER,
        parts=[
            TextPart("echo mixed", metadata={"p": 1}),
            FilePart(raw=b"\x00\xffraw", filename="r.bin", media_type="application/octet-stream"),
            FilePart(url="https://example.com/a.png", filename="a.png", media_type="image/png"),
            DataPart({"k": "v", "n": [1, 2]}),
        ],
        metadata={"from": "grpc"},
    )
    task = await client.send(sent)
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    stored = (await json_rpc.get_task(task.id)).history[0]
    assert stored.message_id == sent.message_id and stored.metadata == sent.metadata
    assert stored.parts == sent.parts
    assert task.history[0] == stored


async def test_a_single_message_reply_is_a_message(client: Client) -> None:
    answer = await client.send("reply hi there")
    assert isinstance(answer, Message)
    assert answer.parts[0].text == "hi there"


async def test_a_follow_up_continues_the_task(client: Client) -> None:
    first = await client.send("input which colour?")
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    done = await client.send("blue", task_id=first.id, context_id=first.context_id)
    assert isinstance(done, Task) and done.id == first.id
    assert done.artifacts[-1].parts[0].text == "got: blue"


async def test_get_gives_the_task_with_the_history_asked_for(client: Client) -> None:
    task = await client.send("echo x")
    assert isinstance(task, Task) and len(task.history) == 2
    got = await client.get_task(task.id, history_length=1)
    assert got.id == task.id and got.status.state is TaskState.COMPLETED
    assert [m.parts[0].text for m in got.history] == ["on it"]
    whole = await client.get_task(task.id)
    assert len(whole.history) == 2


async def test_send_without_waiting_then_cancel(client: Client, agent: ScriptedAgent) -> None:
    task = await client.send("hang", wait=False)
    assert isinstance(task, Task) and task.status.state is TaskState.SUBMITTED
    canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    await wait_for(lambda: task.id in agent.cancelled)


async def test_a_stream_carries_the_task_then_each_update(client: Client) -> None:
    items = [item async for item in client.stream("chunks 3")]
    assert words(items) == [
        "task:submitted",
        "status:working",
        "artifact",
        "artifact",
        "artifact",
        "status:completed",
    ]
    chunks = [i.artifact.parts[0].text for i in items if isinstance(i, TaskArtifactUpdateEvent)]
    assert chunks == ["c0", "c1", "c2"]
    # The ids a2ad adds for resumption are taken out again: no metadata is left.
    assert all(not getattr(item, "metadata", None) for item in items[1:])


async def test_subscribe_from_an_event_replays_the_log_after_it(client: Client) -> None:
    task = await client.send("chunks 3")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    everything = ["status:working", "artifact", "artifact", "artifact", "status:completed"]
    replayed = [item async for item in client.subscribe(task.id, last_event_id=0)]
    assert words(replayed) == everything
    chunks = [item async for item in client.subscribe(task.id, last_event_id=2)]
    assert words(chunks) == everything[2:]
    assert isinstance(chunks[0], TaskArtifactUpdateEvent)
    assert chunks[0].artifact.parts[0].text == "c1"


async def test_subscribe_follows_a_waiting_task_to_its_end(client: Client) -> None:
    task = await client.send("input which?")
    assert isinstance(task, Task)
    seen: list[Any] = []

    async def follow() -> None:
        async for item in client.subscribe(task.id):
            seen.append(item)

    following = asyncio.create_task(follow())
    await wait_for(lambda: len(seen) >= 1)
    await client.send("green", task_id=task.id)
    await asyncio.wait_for(following, 15)
    assert words(seen) == ["task:input-required", "status:working", "artifact", "status:completed"]


async def test_subscribe_resumes_after_its_last_event_when_the_listener_comes_back(
    app: A2AApp,
) -> None:
    first = GrpcServer(app, port=free_port())
    await first.start()
    port = first.port
    second: GrpcServer | None = None
    try:
        async with Client(f"grpc://127.0.0.1:{port}", version="0.3") as c:
            task = await c.send("input which?")
            assert isinstance(task, Task)
            seen: list[Any] = []

            async def follow() -> None:
                async for item in c.subscribe(task.id, reconnect=20, backoff=0.05):
                    seen.append(item)

            following = asyncio.create_task(follow())
            await wait_for(lambda: len(seen) >= 1)
            await first.stop(grace=None)  # the stream breaks; subscribe keeps retrying
            second = GrpcServer(app, port=port)
            await second.start()
            async with Client(f"grpc://127.0.0.1:{port}", version="0.3") as other:
                await other.send("green", task_id=task.id)
            await asyncio.wait_for(following, 15)
    finally:
        await first.stop(grace=None)
        if second is not None:
            await second.stop(grace=None)
    # Nothing twice: the reopened stream starts after the last event seen.
    assert words(seen) == ["task:input-required", "status:working", "artifact", "status:completed"]


@pytest.mark.parametrize("case", ["unknown task", "finished task", "subscribe to finished"])
async def test_errors_are_the_ones_json_rpc_0_3_raises(
    client: Client, json_rpc: Client, case: str
) -> None:
    finished = await client.send("echo x")
    assert isinstance(finished, Task)
    calls = {
        "unknown task": lambda c: c.get_task("no-such-task"),
        "finished task": lambda c: c.cancel_task(finished.id),
        "subscribe to finished": lambda c: anext(c.subscribe(finished.id)),
    }
    raised = []
    for c in (client, json_rpc):
        with pytest.raises(A2AError) as caught:
            await calls[case](c)
        error = caught.value
        raised.append((type(error), error.code, error.message, error.metadata))
    assert raised[0] == raised[1]
    assert raised[0][0] in (TaskNotFoundError, TaskNotCancelableError, UnsupportedOperationError)
    assert not raised[0][2].startswith(raised[0][0].__name__)  # the name is taken off


async def test_listing_tasks_is_refused_as_0_3_grpc_has_no_list_tasks(client: Client) -> None:
    with pytest.raises(ClientError) as caught:
        await client.list_page()
    assert "(a2a.v1.A2AService) has no ListTasks" in caught.value.message
    with pytest.raises(ClientError):
        [task async for task in client.list_tasks()]


async def served_with(agent: ScriptedAgent, *versions: str) -> tuple[A2AApp, GrpcServer]:
    """An app whose card offers gRPC in ``versions`` (one port serves both)."""
    port = free_port()
    interfaces = tuple(Interface("GRPC", version, port) for version in versions)
    app = await started(assemble(agent, AppSettings(interfaces=interfaces)))
    server = GrpcServer(app, port=port)
    await server.start()
    return app, server


@pytest.mark.parametrize(
    ("offered", "forced", "spoken"),
    [
        (("0.3",), None, "0.3"),  # the card offers gRPC in 0.3 only
        (("1.0", "0.3"), None, "1.0"),  # 1.0 first
        (("1.0", "0.3"), "0.3", "0.3"),
    ],
)
async def test_binding_grpc_takes_the_cards_grpc_interface_of_the_version(
    agent: ScriptedAgent, offered: tuple[str, ...], forced: Any, spoken: str
) -> None:
    app, server = await served_with(agent, *offered)
    try:
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
            Client("http://127.0.0.1", binding="grpc", version=forced, http=http) as c,
        ):
            assert await c.version() == spoken
            task = await c.send("echo by the card")
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            if spoken == "0.3":
                with pytest.raises(ClientError):
                    await c.list_page()
            else:
                assert (await c.list_page()).tasks[0].id == task.id
    finally:
        await server.stop(grace=None)
        await app.aclose()


async def test_binding_grpc_0_3_with_a_card_offering_grpc_in_1_0_only_says_so(
    agent: ScriptedAgent,
) -> None:
    app, server = await served_with(agent, "1.0")
    try:
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
            Client("http://127.0.0.1", binding="grpc", version="0.3", http=http) as c,
        ):
            with pytest.raises(ClientError) as caught:
                await c.send("echo x")
    finally:
        await server.stop(grace=None)
        await app.aclose()
    assert "offers no gRPC interface of A2A 0.3;" in caught.value.message


@pytest.mark.parametrize(
    "card",
    [
        {"url": "http://h:1/", "additionalInterfaces": [{"url": "h:50051", "transport": "GRPC"}]},
        {"url": "h:50051", "preferredTransport": "GRPC"},
        {
            "supportedInterfaces": [
                {"url": "h:50051", "protocolBinding": "GRPC", "protocolVersion": "0.3"}
            ]
        },
    ],
)
def test_a_0_3_cards_grpc_interface_is_found_where_0_3_puts_it(card: dict[str, Any]) -> None:
    assert card_grpc_address(card, "https://h", "0.3") == GrpcAddress("h:50051", tls=True)
    assert card_grpc_address(card, "https://h", "1.0") is None


# --- against the official SDK's gRPC server, serving 0.3 ---


@pytest.fixture
async def sdk() -> AsyncIterator[Client]:
    """The SDK's echo agent (bench/peers/sdk_echo.py: ``sleep:N`` waits, cancel
    cancels) behind its DefaultRequestHandler, served in 0.3 only by its
    CompatGrpcHandler, and a client of it."""
    spec = importlib.util.spec_from_file_location("sdk_echo_peer", SDK_PEER)
    assert spec is not None and spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    port = server.add_insecure_port("127.0.0.1:0")
    card = AgentCard(
        name="echo",
        description="Echoes the text it receives back as an artifact.",
        version="1.0.0",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes", tags=["echo"])],
        supported_interfaces=[
            AgentInterface(url=f"127.0.0.1:{port}", protocol_binding="GRPC", protocol_version="0.3")
        ],
        capabilities=AgentCapabilities(streaming=True),
    )
    handler = DefaultRequestHandler(
        agent_executor=peer.EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    servicer = CompatGrpcHandler(handler)
    a2a_v0_3_pb2_grpc.add_A2AServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    await server.start()
    try:
        async with Client(f"grpc://127.0.0.1:{port}", version="0.3") as c:
            yield c
    finally:
        await server.stop(None)


async def test_the_sdk_answers_send_and_get(sdk: Client) -> None:
    task = await sdk.send("hello sdk")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert task.artifacts[0].parts[0].text == "hello sdk"
    got = await sdk.get_task(task.id)
    assert got.id == task.id and got.status.state is TaskState.COMPLETED
    assert got.history[0].parts[0].text == "hello sdk"


async def test_the_sdk_takes_a_send_without_waiting(sdk: Client) -> None:
    task = await sdk.send("sleep:30 long", wait=False)
    assert isinstance(task, Task) and not task.status.state.terminal
    canceled = await sdk.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED


async def test_the_sdk_streams_its_updates(sdk: Client) -> None:
    items = [item async for item in sdk.stream("streamed")]
    assert words(items)[-1] == "status:completed"
    artifacts = [i for i in items if isinstance(i, TaskArtifactUpdateEvent)]
    assert artifacts[0].artifact.parts[0].text == "streamed"


async def test_the_sdk_is_followed_to_the_end_of_a_task(sdk: Client) -> None:
    task = await sdk.send("sleep:0.5 later", wait=False)
    assert isinstance(task, Task)
    items = [item async for item in sdk.subscribe(task.id)]
    assert words(items)[-1] in ("status:completed", "task:completed")


async def test_the_sdks_task_not_found_is_task_not_found_by_its_name(sdk: Client) -> None:
    # The SDK's 0.3 service sends no ErrorInfo: the message's name says which error.
    with pytest.raises(TaskNotFoundError) as caught:
        await sdk.get_task("00000000-0000-4000-8000-000000000000")
    assert caught.value.code == -32001
    assert not caught.value.message.startswith("TaskNotFoundError")


async def test_the_sdk_is_not_asked_to_list_tasks(sdk: Client) -> None:
    with pytest.raises(ClientError) as caught:
        await sdk.list_page()
    assert "0.3's gRPC service (a2a.v1.A2AService) has no ListTasks" in caught.value.message
