"""a2ad.Client against a real a2ad (uvicorn on a free port), in both A2A versions.

Every operation, the typed errors, the version choice from the card, paging,
subscribe's reconnect with Last-Event-ID, and the sync wrapper.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from a2ad import (
    Client,
    ClientError,
    DataPart,
    FilePart,
    Message,
    SyncClient,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
)
from a2ad.client.client import RemoteError
from a2ad.client.operations import _choose
from a2ad.protocol.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from ..conftest import LiveServer, free_port, wait_for
from ..scripted import ScriptedAgent


@pytest.fixture(params=["1.0", "0.3"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def live(agent: ScriptedAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(agent)) as server:
        yield server


@pytest.fixture
async def client(live: LiveServer, version: str) -> AsyncIterator[Client]:
    # 1.0 is what the card's choice gives; 0.3 is forced, as for a 0.3-only server.
    async with Client(live.url, version=None if version == "1.0" else "0.3") as c:  # type: ignore[arg-type]
        yield c


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


async def test_the_card_offers_1_0_so_the_client_speaks_1_0(live: LiveServer) -> None:
    async with Client(live.url) as c:
        card = await c.card()
        assert card["name"] == "scripted"
        assert await c.version() == "1.0"


def test_a_card_without_a_1_0_interface_means_0_3_at_its_url() -> None:
    card = {"url": "http://x/a2a/", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"}
    assert _choose(card, "http://x") == ("0.3", "http://x/a2a/")
    both = {
        **card,
        "supportedInterfaces": [
            {"url": "http://x/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
    }
    assert _choose(both, "http://x") == ("1.0", "http://x/v1")


async def test_send_waits_for_the_answer(client: Client) -> None:
    task = await client.send("echo hello")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == ["hello"]
    assert task.history[0].parts[0].text == "echo hello"


async def test_every_part_kind_comes_back_typed(client: Client) -> None:
    task = await client.send("parts")
    assert isinstance(task, Task)
    parts = {a.name: a.parts[0] for a in task.artifacts}
    assert parts["data"].data == {"n": 1, "xs": [1, 2]}
    assert parts["raw"].raw == b"\x00\x01bytes" and parts["raw"].filename == "b.bin"
    assert parts["url"].url == "https://example.com/f.pdf"


async def test_send_parts_and_metadata(client: Client, agent: ScriptedAgent) -> None:
    task = await client.send(
        [DataPart({"k": 1}), FilePart(url="https://example.com/a.txt")],
        metadata={"who": "test"},
    )
    assert isinstance(task, Task)
    sent = task.history[0].parts
    assert sent[0].data == {"k": 1} and sent[1].url == "https://example.com/a.txt"


async def test_a_single_message_reply_is_a_message(client: Client) -> None:
    answer = await client.send("reply hi there")
    assert isinstance(answer, Message)
    assert answer.parts[0].text == "hi there"


async def test_a_follow_up_continues_the_task_in_its_context(client: Client) -> None:
    first = await client.send("input which colour?")
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    done = await client.send("blue", task_id=first.id, context_id=first.context_id)
    assert isinstance(done, Task) and done.id == first.id
    assert done.status.state is TaskState.COMPLETED
    assert done.artifacts[-1].parts[0].text == "got: blue"


async def test_send_without_waiting_then_cancel(client: Client, agent: ScriptedAgent) -> None:
    task = await client.send("hang", wait=False)
    assert isinstance(task, Task) and task.status.state is TaskState.SUBMITTED
    canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert (await client.get_task(task.id)).status.state is TaskState.CANCELED


async def test_stream_yields_typed_events_in_order(client: Client) -> None:
    items = [item async for item in client.stream("chunks 3")]
    assert words(items) == [
        "task:submitted",
        "status:working",
        "artifact",
        "artifact",
        "artifact",
        "status:completed",
    ]
    chunks = [i for i in items if isinstance(i, TaskArtifactUpdateEvent)]
    assert [c.append for c in chunks] == [False, True, True]
    assert chunks[-1].last_chunk


async def test_get_task_with_history_length(client: Client) -> None:
    task = await client.send("echo x")
    assert isinstance(task, Task)
    got = await client.get_task(task.id, history_length=0)
    assert got.id == task.id and got.history == []


async def test_list_tasks_pages_through_everything(client: Client) -> None:
    made = []
    for i in range(7):
        t = await client.send(f"echo {i}", context_id="ctx-list")
        assert isinstance(t, Task)
        made.append(t.id)
    await client.send("echo elsewhere")
    listed = [t.id async for t in client.list_tasks(context_id="ctx-list", page_size=3)]
    assert listed == made[::-1]  # newest first, across three pages
    assert [t.id async for t in client.list_tasks(context_id="ctx-list", limit=4)] == listed[:4]
    page = await client.list_page(context_id="ctx-list", page_size=5)
    assert page.total_size == 7 and len(page.tasks) == 5 and page.next_page_token


async def test_list_tasks_filters_by_state_in_any_spelling(client: Client) -> None:
    waiting = await client.send("input which?")
    await client.send("echo done")
    assert isinstance(waiting, Task)
    for state in ("input-required", TaskState.INPUT_REQUIRED, "TASK_STATE_INPUT_REQUIRED"):
        assert [t.id async for t in client.list_tasks(state=state)] == [waiting.id]


async def test_unknown_task_raises_task_not_found_with_its_code(client: Client) -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        await client.get_task("no-such-task")
    assert caught.value.code == -32001
    assert "no-such-task" in caught.value.message


async def test_cancelling_a_finished_task_raises_not_cancelable(client: Client) -> None:
    task = await client.send("echo x")
    assert isinstance(task, Task)
    with pytest.raises(TaskNotCancelableError) as caught:
        await client.cancel_task(task.id)
    assert caught.value.code == -32002


async def test_invalid_params_name_the_field(client: Client) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        await client.list_page(page_size=500)
    assert "pageSize" in caught.value.message


async def test_subscribe_follows_a_task_to_its_end(client: Client, agent: ScriptedAgent) -> None:
    task = await client.send("input which?", wait=False)
    assert isinstance(task, Task)

    async def asking() -> bool:
        return (await client.get_task(task.id)).status.state is TaskState.INPUT_REQUIRED

    await wait_for(asking)
    async with asyncio.timeout(5):
        following = client.subscribe(task.id)
        # The server sends the task only once the subscription is in place, so the
        # answer below cannot slip past it.
        items = [await anext(following)]
        await client.send("red", task_id=task.id)
        items += [item async for item in following]
    assert words(items)[0] == "task:input-required"
    assert words(items)[-1] == "status:completed"


async def test_subscribing_to_a_finished_task_says_so(client: Client) -> None:
    task = await client.send("echo x")
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperationError) as caught:
        [item async for item in client.subscribe(task.id)]
    assert "completed" in caught.value.message


async def test_subscribe_from_event_0_replays_a_finished_tasks_whole_log(client: Client) -> None:
    task = await client.send("chunks 3")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    everything = ["status:working", "artifact", "artifact", "artifact", "status:completed"]
    for start in (0, "0"):
        replayed = [item async for item in client.subscribe(task.id, last_event_id=start)]
        assert words(replayed) == everything, start
    chunks = [item async for item in client.subscribe(task.id, last_event_id=2)]
    assert words(chunks) == everything[2:]
    assert isinstance(chunks[0], TaskArtifactUpdateEvent)
    assert chunks[0].artifact.parts[0].text == "c1"


async def test_subscribe_reconnects_and_resumes_after_the_last_event(
    agent: ScriptedAgent,
) -> None:
    # The server goes away mid-task and comes back on the same port and store;
    # the client reconnects with Last-Event-ID and sees the rest, nothing twice.
    from a2ad import MemoryStore

    store = MemoryStore()
    port = free_port()
    first = _Server(create_app(agent, store=store), port)
    first.start()
    async with Client(first.url) as c:
        task = await c.send("input which?")
        assert isinstance(task, Task)
        seen: list[Any] = []

        async def follow() -> None:
            async for item in c.subscribe(task.id, reconnect=20, backoff=0.05):
                seen.append(item)

        following = asyncio.create_task(follow())
        await wait_for(lambda: len(seen) >= 1)
        first.stop()  # the stream breaks; subscribe keeps retrying
        second = _Server(create_app(agent, store=store), port)
        second.start()
        try:
            async with Client(second.url) as other:
                await other.send("green", task_id=task.id)
            await asyncio.wait_for(following, 10)
        finally:
            second.stop()
    states = words(seen)
    # Resumed after the last event seen: no second snapshot, nothing twice.
    assert [s for s in states if s.startswith("task:")] == ["task:input-required"]
    assert states[-1] == "status:completed"
    assert states.count("status:completed") == 1


async def test_server_down_is_a_client_error_naming_the_server() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with Client(url) as c:
        with pytest.raises(ClientError) as caught:
            await c.send("hello")
    assert url in caught.value.message and "refused" in caught.value.message


async def test_a_server_that_is_not_a2a_is_a_client_error(live: LiveServer) -> None:
    async with Client(live.url + "/nowhere") as c:
        with pytest.raises(ClientError) as caught:
            await c.card()
    assert "agent card" in caught.value.message


async def test_an_unknown_error_code_keeps_the_servers_code() -> None:
    error = RemoteError("custom", code=-32099)
    assert error.code == -32099 and error.message == "custom"


async def test_bearer_token_and_api_key_are_sent(live: LiveServer) -> None:
    seen: list[dict[str, str]] = []
    import httpx

    async def record(request: httpx.Request) -> None:
        seen.append(dict(request.headers))

    http = httpx.AsyncClient(event_hooks={"request": [record]})
    async with Client(live.url, token="t0k", api_key="k3y", http=http) as c:
        await c.send("echo x")
    await http.aclose()
    assert all(h["authorization"] == "Bearer t0k" and h["x-api-key"] == "k3y" for h in seen)


def test_sync_client_does_the_same_without_await(live: LiveServer) -> None:
    with SyncClient(live.url) as c:
        assert c.version() == "1.0"
        task = c.send("echo sync")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert c.get_task(task.id).id == task.id
        assert words(list(c.stream("echo s")))[-1] == "status:completed"
        assert task.id in [t.id for t in c.list_tasks(limit=10)]
        with pytest.raises(TaskNotFoundError):
            c.cancel_task("nope")


class _Server:
    """a2ad on a fixed port, stoppable and restartable (LiveServer picks its own)."""

    def __init__(self, app: Any, port: int) -> None:
        import uvicorn

        self.url = f"http://127.0.0.1:{port}"
        app.engine.shutdown_grace = 0
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            # uvicorn offers a flag, not an event; a thread that ended will never set it.
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.url}")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


async def test_sync_client_inside_a_running_loop_says_to_use_client(live: LiveServer) -> None:
    with pytest.raises(RuntimeError, match=r"a2ad\.Client"):
        SyncClient(live.url)


async def test_subscribe_to_a_server_that_is_down_fails_at_once() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with Client(url, version="1.0") as c:
        with pytest.raises(ClientError, match="refused"):
            [item async for item in c.subscribe("some-task", reconnect=5, backoff=1.0)]
    assert loop.time() - started < 1.0  # no backoff before the first stream ever opened
