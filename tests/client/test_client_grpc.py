"""a2ad.Client over gRPC (A2A 1.0, ``lf.a2a.v1.A2AService``): against a2ad's own
gRPC listener on a real port in this process, and against the official SDK's
gRPC server; and ``a2ad send --url grpc://…`` as a user runs it.

The operations give what they give over JSON-RPC (tests/client/test_client.py),
errors are the classes, messages and data JSON-RPC raises, subscribe resumes
with ``last-event-id`` after the server comes back, credentials and the agent
go as metadata, and ``binding="grpc"`` finds the address in the agent card."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import msgspec
import pytest
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, a2a_pb2_grpc

from a2ad import (
    A2AApp,
    ApiKeys,
    Client,
    ClientError,
    CredentialAuthenticator,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
)
from a2ad.assembly import assemble
from a2ad.client.traced import CALL_TRACER
from a2ad.protocol.errors import (
    A2AError,
    MethodNotFoundError,
    TaskNotFoundError,
    UnauthenticatedError,
    UnsupportedOperationError,
)
from a2ad.server import auth
from a2ad.server.card import Interface
from a2ad.server.grpc_server import GrpcServer
from a2ad.settings import AppSettings

from ..conftest import SDK_PEER, free_port, wait_for
from ..scripted import ScriptedAgent
from ..served import Served, run_a2ad


def words(items: list[Any]) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, Task):
            out.append(f"task:{item.status.state.word}")
        elif isinstance(item, TaskStatusUpdateEvent):
            out.append(f"status:{item.status.state.word}")
        elif isinstance(item, TaskArtifactUpdateEvent):
            out.append("artifact")
        else:
            out.append("message")
    return out


async def started(app: A2AApp) -> A2AApp:
    app.engine.shutdown_grace = 0  # tests leave "hang" tasks running
    await app.lifetime.start()
    return app


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
    async with Client(f"grpc://{server.address}") as c:
        yield c


@pytest.fixture
async def json_rpc(app: A2AApp) -> AsyncIterator[Client]:
    """The same app over JSON-RPC (in process), to hold gRPC's answers up to."""
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
        Client("http://a2ad.test", version="1.0", http=http) as c,
    ):
        yield c


# --- against a2ad's gRPC listener ---


async def test_a_grpc_url_speaks_1_0_there_without_a_card(client: Client) -> None:
    assert client.binding == "grpc"
    assert await client.version() == "1.0"
    with pytest.raises(ClientError) as caught:
        await client.card()
    assert "served over HTTP" in caught.value.message


async def test_send_waits_for_the_answer(client: Client) -> None:
    task = await client.send("echo hello")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == ["hello"]
    assert task.history[0].parts[0].text == "echo hello"


async def test_every_part_kind_comes_back_as_over_json_rpc(
    client: Client, json_rpc: Client
) -> None:
    task = await client.send("parts")
    assert isinstance(task, Task)
    parts = {a.name: a.parts[0] for a in task.artifacts}
    # protobuf's Value holds numbers as doubles: they come back as the ints sent.
    assert msgspec.json.encode(parts["data"].data, order="sorted") == b'{"n":1,"xs":[1,2]}'
    assert parts["raw"].raw == b"\x00\x01bytes" and parts["raw"].filename == "b.bin"
    assert parts["url"].url == "https://example.com/f.pdf"
    assert await json_rpc.get_task(task.id) == task


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


async def test_get_and_list_page_through_the_tasks_sent(client: Client) -> None:
    made = []
    for i in range(3):
        task = await client.send(f"echo {i}", context_id="grpc-list")
        assert isinstance(task, Task)
        made.append(task.id)
    await client.send("echo elsewhere")
    page = await client.list_page(context_id="grpc-list", page_size=2)
    assert len(page.tasks) == 2 and page.next_page_token and page.total_size == 3
    listed = [t.id async for t in client.list_tasks(context_id="grpc-list", page_size=2)]
    assert listed == made[::-1]  # newest first, across pages
    got = await client.get_task(made[0], history_length=1)
    assert got.id == made[0] and got.status.state is TaskState.COMPLETED
    assert len(got.history) == 1


async def test_send_without_waiting_then_cancel(client: Client, agent: ScriptedAgent) -> None:
    task = await client.send("hang", wait=False)
    assert isinstance(task, Task) and task.status.state is TaskState.SUBMITTED
    canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    await wait_for(lambda: task.id in agent.cancelled)


async def test_a_stream_carries_the_task_then_each_update_without_event_ids(
    client: Client,
) -> None:
    items = [item async for item in client.stream("chunks 3")]
    assert words(items)[0].startswith("task:")
    assert words(items)[1:] == [
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


async def test_subscribe_from_event_0_replays_a_finished_tasks_whole_log(client: Client) -> None:
    task = await client.send("chunks 3")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    everything = ["status:working", "artifact", "artifact", "artifact", "status:completed"]
    replayed = [item async for item in client.subscribe(task.id, last_event_id=0)]
    assert words(replayed) == everything
    chunks = [item async for item in client.subscribe(task.id, last_event_id=2)]
    assert words(chunks) == everything[2:]
    assert isinstance(chunks[0], TaskArtifactUpdateEvent)
    assert chunks[0].artifact.parts[0].text == "c1"


async def test_subscribe_resumes_after_its_last_event_when_the_listener_comes_back(
    app: A2AApp,
) -> None:
    # The gRPC listener goes away mid-task and comes back on the same port; the
    # client reopens the stream with last-event-id and sees the rest, nothing twice.
    first = GrpcServer(app, port=free_port())
    await first.start()
    port = first.port
    second: GrpcServer | None = None
    try:
        async with Client(f"grpc://127.0.0.1:{port}") as c:
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
            async with Client(f"grpc://127.0.0.1:{port}") as other:
                await other.send("green", task_id=task.id)
            await asyncio.wait_for(following, 15)
    finally:
        await first.stop(grace=None)
        if second is not None:
            await second.stop(grace=None)
    states = words(seen)
    assert [s for s in states if s.startswith("task:")] == ["task:input-required"]
    assert states[1:] == ["status:working", "artifact", "status:completed"]


async def test_subscribing_to_a_finished_task_says_so(client: Client) -> None:
    task = await client.send("echo x")
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperationError) as caught:
        [item async for item in client.subscribe(task.id)]
    assert "completed" in caught.value.message


async def test_a_traced_call_is_handed_to_the_call_tracer_with_its_metadata(
    guarded: tuple[str, str],
) -> None:
    url, key = guarded
    calls: list[tuple[str, str, str]] = []
    answers: list[int] = []

    @contextlib.contextmanager
    def tracer(
        rpc_method: str, method: str, where: str, headers: dict[str, str]
    ) -> Iterator[Callable[[int], None]]:
        calls.append((rpc_method, method, where))
        # What a tracer adds (its trace context) goes with the call: here, a key.
        headers["X-API-Key"] = key
        yield answers.append

    token = CALL_TRACER.set(tracer)
    try:
        async with Client(url) as c:
            task = await c.send("echo traced")
            assert isinstance(task, Task)
            events = [item async for item in c.stream("echo streamed")]
    finally:
        CALL_TRACER.reset(token)
    service = f"{url}/lf.a2a.v1.A2AService"
    assert calls == [
        ("SendMessage", "POST", f"{service}/SendMessage"),
        ("SendStreamingMessage", "POST", f"{service}/SendStreamingMessage"),
    ]
    assert answers == [200, 200] and words(events)[-1] == "status:completed"


@pytest.mark.parametrize("case", ["unknown task", "finished task", "bad page size"])
async def test_errors_are_the_ones_json_rpc_raises(
    client: Client, json_rpc: Client, case: str
) -> None:
    finished = await client.send("echo x")
    assert isinstance(finished, Task)
    calls = {
        "unknown task": lambda c: c.get_task("no-such-task"),
        "finished task": lambda c: c.cancel_task(finished.id),
        "bad page size": lambda c: c.list_page(page_size=500),
    }
    raised = []
    for c in (client, json_rpc):
        with pytest.raises(A2AError) as caught:
            await calls[case](c)
        error: Any = caught.value
        raised.append((type(error), error.code, error.message, error.metadata, error.data))
    assert raised[0] == raised[1]
    assert raised[0][2] and raised[0][4]  # a message, and the details


async def test_a_task_not_found_names_the_task(client: Client) -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        await client.get_task("no-such-task")
    assert caught.value.code == -32001
    assert caught.value.metadata == {"taskId": "no-such-task"}


async def test_an_agent_of_the_server_is_named_by_its_path() -> None:
    app = await started(create_app({"stock": ScriptedAgent(), "news": ScriptedAgent()}))
    server = GrpcServer(app)
    await server.start()
    try:
        async with (
            Client(f"grpc://{server.address}/agents/news") as news,
            Client(f"grpc://{server.address}/agents/stock") as stock,
            Client(f"grpc://{server.address}/agents/weather") as weather,
        ):
            task = await news.send("echo headline")
            assert isinstance(task, Task)
            assert (await news.get_task(task.id)).status.state is TaskState.COMPLETED
            with pytest.raises(TaskNotFoundError):
                await stock.get_task(task.id)  # a task is reached only at its agent
            with pytest.raises(MethodNotFoundError) as caught:
                await weather.send("echo x")
            assert "stock" in caught.value.message and "news" in caught.value.message
    finally:
        await server.stop(grace=None)
        await app.aclose()


@pytest.fixture
async def guarded(agent: ScriptedAgent, tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    """A server whose callers need a key: its gRPC URL, and a key."""
    keys = str(tmp_path / "keys.toml")
    key = auth.add_key(keys, "ann")
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(keys))
    app = await started(create_app(agent, authenticator=authenticator))
    server = GrpcServer(app)
    await server.start()
    try:
        yield f"grpc://{server.address}", key
    finally:
        await server.stop(grace=None)
        await app.aclose()


async def test_credentials_go_as_call_metadata(guarded: tuple[str, str]) -> None:
    url, key = guarded
    async with Client(url) as anonymous:
        with pytest.raises(UnauthenticatedError):
            await anonymous.send("echo who")
    async with Client(url, token=key) as bearer, Client(url, api_key=key) as keyed:
        by_token = await bearer.send("echo by token")
        assert isinstance(by_token, Task)
        assert by_token.status.state is TaskState.COMPLETED
        # The same caller either way: each reads the other's task.
        assert (await keyed.get_task(by_token.id)).id == by_token.id


async def test_binding_grpc_calls_the_address_the_agent_card_names(agent: ScriptedAgent) -> None:
    port = free_port()
    settings = AppSettings(interfaces=(Interface("GRPC", "1.0", port),))
    app = await started(assemble(agent, settings))
    server = GrpcServer(app, port=port)
    await server.start()
    try:
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
            Client("http://127.0.0.1", binding="grpc", http=http) as c,
        ):
            task = await c.send("echo by the card")
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            assert c.binding == "grpc" and await c.version() == "1.0"
            await server.stop(grace=None)
            # Gone from gRPC, still on HTTP: the calls were gRPC's.
            with pytest.raises(ClientError) as caught:
                await c.get_task(task.id)
            assert f"grpc://127.0.0.1:{port} (gRPC, from http://127.0.0.1's" in str(caught.value)
    finally:
        await server.stop(grace=None)
        await app.aclose()


async def test_binding_grpc_with_a_card_offering_no_grpc_says_so(app: A2AApp) -> None:
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
        Client("http://127.0.0.1", binding="grpc", http=http) as c,
    ):
        with pytest.raises(ClientError) as caught:
            await c.send("echo x")
    assert "offers no gRPC interface" in caught.value.message


async def test_an_answer_slower_than_the_timeout_is_a_client_error(server: GrpcServer) -> None:
    async with Client(f"grpc://{server.address}", timeout=0.3) as c:
        with pytest.raises(ClientError) as caught:
            await c.send("hang")
    assert caught.value.message.startswith(f"waited on grpc://{server.address}: no answer")
    assert "0.3 s" in caught.value.message


async def test_a_stream_silent_past_stream_timeout_is_a_client_error(server: GrpcServer) -> None:
    seen: list[Any] = []
    async with Client(f"grpc://{server.address}", stream_timeout=0.3) as c:
        with pytest.raises(ClientError) as caught:
            async for item in c.stream("hang"):
                seen.append(item)
    assert words(seen) == ["task:submitted", "status:working"]
    assert "no answer within 0.3 s" in caught.value.message


async def test_a_server_that_is_down_is_a_client_error_naming_it() -> None:
    url = f"grpc://127.0.0.1:{free_port()}"
    async with Client(url) as c:
        with pytest.raises(ClientError) as caught:
            await c.send("hello")
    assert caught.value.message.startswith(f"can't reach {url}: connection refused")


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("grpc://127.0.0.1", {}),  # no port
        ("grpc://127.0.0.1:5/a2a", {}),  # a path other than /agents/NAME
        ("grpc://127.0.0.1:5", {"binding": "jsonrpc"}),
        ("http://127.0.0.1:5", {"binding": "rest"}),
    ],
)
def test_what_grpc_cannot_do_is_refused_when_the_client_is_made(
    url: str, options: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=r"gRPC|grpc|binding"):
        Client(url, **options)


def test_without_the_grpc_extra_a_grpc_url_says_what_to_install() -> None:
    script = (
        "import sys; sys.modules['grpc'] = None  # as if grpcio were not installed\n"
        "from a2ad import Client, ClientError\n"
        "try:\n"
        "    Client('grpc://127.0.0.1:50051')\n"
        "except ClientError as exc:\n"
        "    print(exc.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'a2ad[grpc]'" in done.stdout


# --- against the official SDK's gRPC server ---


@pytest.fixture
async def sdk_address() -> AsyncIterator[str]:
    """The SDK's echo agent (bench/peers/sdk_echo.py: ``sleep:N`` waits, cancel
    cancels) behind its DefaultRequestHandler, served by its own GrpcHandler."""
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
            AgentInterface(url=f"127.0.0.1:{port}", protocol_binding="GRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
    )
    handler = DefaultRequestHandler(
        agent_executor=peer.EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)  # type: ignore[no-untyped-call]
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


@pytest.fixture
async def sdk(sdk_address: str) -> AsyncIterator[Client]:
    async with Client(f"grpc://{sdk_address}") as c:
        yield c


async def test_the_sdk_answers_send_and_get(sdk: Client) -> None:
    task = await sdk.send("hello sdk")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert task.artifacts[0].parts[0].text == "hello sdk"
    got = await sdk.get_task(task.id)
    assert got.id == task.id and got.status.state is TaskState.COMPLETED


async def test_the_sdk_streams_its_updates(sdk: Client) -> None:
    items = [item async for item in sdk.stream("streamed")]
    assert words(items)[-1] == "status:completed"
    artifacts = [i for i in items if isinstance(i, TaskArtifactUpdateEvent)]
    assert artifacts[0].artifact.parts[0].text == "streamed"


async def test_the_sdk_lists_its_tasks_page_by_page(sdk: Client) -> None:
    made = []
    for i in range(3):
        task = await sdk.send(f"n{i}", context_id="sdk-grpc-list")
        assert isinstance(task, Task)
        made.append(task.id)
    listed = [t.id async for t in sdk.list_tasks(context_id="sdk-grpc-list", page_size=2)]
    assert sorted(listed) == sorted(made)


async def test_the_sdk_cancels_a_running_task(sdk: Client) -> None:
    task = await sdk.send("sleep:30 long", wait=False)
    assert isinstance(task, Task)
    canceled = await sdk.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED


async def test_the_sdk_is_followed_to_the_end_of_a_task(sdk: Client) -> None:
    task = await sdk.send("sleep:0.5 later", wait=False)
    assert isinstance(task, Task)
    items = [item async for item in sdk.subscribe(task.id)]
    assert words(items)[-1] in ("status:completed", "task:completed")


async def test_the_sdks_task_not_found_is_task_not_found(sdk: Client) -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        await sdk.get_task("00000000-0000-4000-8000-000000000000")
    assert caught.value.code == -32001


# --- the command line ---


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    """``a2ad serve --grpc-port 0``: its HTTP URL and its gRPC address."""
    with Served("--agent", "tests.scripted:ScriptedAgent", "--grpc-port", "0") as server:
        address = server.expect(r"gRPC:\s+(\S+)\s").group(1)
        yield server.url, address


def test_a2ad_send_and_tasks_get_over_grpc(served: tuple[str, str]) -> None:
    url, address = served
    sent = run_a2ad("send", "--url", f"grpc://{address}", "echo hi over grpc")
    assert sent.returncode == 0, sent.stderr
    assert "completed" in sent.stdout and "hi over grpc" in sent.stdout
    # --binding grpc: the address from the card at --url.
    by_card = run_a2ad("send", "--url", url, "--binding", "grpc", "--json", "echo by card")
    assert by_card.returncode == 0, by_card.stderr
    task_id = json.loads(by_card.stdout)["id"]
    got = run_a2ad("tasks", "get", task_id, "--url", f"grpc://{address}", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["status"]["state"] == "TASK_STATE_COMPLETED"
    missing = run_a2ad("tasks", "get", "nope", "--url", f"grpc://{address}")
    assert missing.returncode == 1
    assert f"task nope not found on grpc://{address}" in missing.stderr
