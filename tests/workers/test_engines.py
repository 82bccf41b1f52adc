"""A front engine (runs no agents) and a worker's engine over one PostgreSQL
schema in one process, their signals carried by the hub of the signal-bus
tests: what a front answers when a worker runs the turn. (Real processes:
test_processes.py.)"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import NamedTuple

import pytest

from a2ad import Engine, Message, Task, TaskState
from a2ad.agent import Caller, RequestContext
from a2ad.engine import remote
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.engine.signal_bus import SignalBus
from a2ad.engine.worker import Worker
from a2ad.protocol.model import TaskPushNotificationConfig
from a2ad.store.base import Webhook
from a2ad.store.postgres import PostgresStore

from ..engine.requests import WAIT, request
from ..engine.test_signal_bus import Hub, HubSignals
from ..postgres import fresh_schema
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver

SWEEP = 0.5  # seconds between the worker's looks for work it was not woken for


class Pair(NamedTuple):
    url: str
    front: Engine
    worker: Worker
    engine: Engine  # the worker's
    agent: ScriptedAgent
    store: PostgresStore
    hub: Hub  # carries the signals between the two engines


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    async with fresh_schema() as url:
        hub = Hub()
        front_store, worker_store = PostgresStore(url), PostgresStore(url)
        front = build_engine(
            ScriptedAgent(),
            front_store,
            EngineConfig(runs_agents=False, allow_private_webhooks=True),
            bus=SignalBus(front_store, HubSignals(hub)),
        )
        agent = ScriptedAgent()
        engine = build_engine(
            agent,
            worker_store,
            EngineConfig(deliver_push=False),
            bus=SignalBus(worker_store, HubSignals(hub)),
        )
        await front.start()
        await engine.start()
        worker = Worker(engine, concurrency=2, sweep_seconds=SWEEP)
        running = asyncio.ensure_future(worker.run())
        try:
            yield Pair(url, front, worker, engine, agent, front_store, hub)
        finally:
            worker.stop()
            await running
            await engine.shutdown(graceful=False)
            await worker.aclose()
            await engine.aclose()
            await front.aclose()


async def test_a_blocking_send_to_a_front_answers_with_the_task_a_worker_completed(
    pair: Pair,
) -> None:
    async with asyncio.timeout(WAIT):
        task = await pair.front.send(request("echo hello"))
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert task.artifacts[0].parts[0].text == "hello"  # type: ignore[union-attr]


async def test_a_blocking_send_whose_signals_are_lost_still_answers_when_the_turn_ends(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's signals never reach the front (a NOTIFY lost, and no reconnection
    # to tell of it): the front reads the task again once its stream is quiet.
    monkeypatch.setattr(remote, "QUIET_SECONDS", 0.3)
    pair.hub.connected = False
    async with asyncio.timeout(WAIT):
        task = await pair.front.send(request("echo hello"))
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert task.artifacts[0].parts[0].text == "hello"  # type: ignore[union-attr]


async def test_a_stream_from_a_front_has_the_workers_events_in_order(pair: Pair) -> None:
    stream = await pair.front.stream(request("chunks 3"))
    steps = []
    async with asyncio.timeout(WAIT):
        while (step := await stream.next(WAIT)) is not None:
            steps.append(step)
    assert [seq for seq, _, _ in steps] == list(range(len(steps)))
    assert steps[-1][2]


async def test_a_stream_whose_signals_are_lost_gets_every_event_once_quiet(pair: Pair) -> None:
    pair.hub.connected = False  # the worker's signals never reach the front
    stream = await pair.front.stream(request("chunks 3"))
    steps = []
    async with asyncio.timeout(WAIT):
        while True:
            try:
                step = await stream.next(0.3)
            except TimeoutError:
                continue  # as the SSE writer does: a keep-alive, then it waits again
            if step is None:
                break
            steps.append(step)
    assert [seq for seq, _, _ in steps] == list(range(len(steps)))
    assert steps[-1][2] and len(steps) >= 5  # the task, working, three chunks, completed


async def test_the_agent_gets_the_requests_metadata_and_context(pair: Pair) -> None:
    seen: list[tuple[dict[str, object], RequestContext]] = []

    class Recording(ScriptedAgent):
        async def run(self, ctx):  # type: ignore[no-untyped-def]
            seen.append((ctx.metadata, ctx.request))
            await ctx.complete("ok")

    pair.engine.agents[""] = Recording()
    context = RequestContext(
        version="0.3",
        binding="JSONRPC",
        extensions=frozenset({"urn:x"}),
        caller=Caller(principal="ann", roles=frozenset({"operator"}), authenticated=True),
    )
    await pair.front.send(request("hi", metadata={"k": [1, 2]}), context)
    assert seen == [({"k": [1, 2]}, context)]


async def test_a_reply_message_completes_the_task_the_front_stored(pair: Pair) -> None:
    task = await pair.front.send(request("reply hi there"))
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert isinstance(task.status.message, Message)


async def started(agent: ScriptedAgent, task_id: str) -> None:
    async with asyncio.timeout(WAIT):
        while task_id not in agent.started:
            await asyncio.sleep(0.005)


async def test_cancel_on_the_front_stops_the_agent_in_the_worker_and_ends_the_stream(
    pair: Pair,
) -> None:
    stream = await pair.front.stream(request("hang"))
    head = await stream.next(WAIT)
    assert head is not None
    task_id = head[1].id  # type: ignore[union-attr]
    await started(pair.agent, task_id)
    canceled = await pair.front.cancel(task_id)
    assert canceled.status.state is TaskState.CANCELED
    last = None
    async with asyncio.timeout(WAIT):
        while (step := await stream.next(WAIT)) is not None:
            last = step
        while task_id not in pair.agent.cancelled:
            await asyncio.sleep(0.005)
    assert last is not None and last[1].status.state is TaskState.CANCELED  # type: ignore[union-attr]


async def test_at_most_concurrency_turns_run_and_a_waiting_one_is_canceled_before_it_runs(
    pair: Pair,
) -> None:
    tasks = [await pair.front.send(request("hang", immediately=True)) for _ in range(3)]
    ids = [t.id for t in tasks]  # type: ignore[union-attr]
    await started(pair.agent, ids[0])
    await started(pair.agent, ids[1])
    await asyncio.sleep(0.3)  # a third would have started by now
    assert ids[2] not in pair.agent.started
    waiting = await pair.front.get_task(ids[2])
    assert waiting.status.state is TaskState.SUBMITTED
    canceled = await pair.front.cancel(ids[2])
    assert canceled.status.state is TaskState.CANCELED
    # A slot frees: the canceled turn is dropped, not run.
    await pair.front.cancel(ids[0])
    await asyncio.sleep(0.3)
    assert ids[2] not in pair.agent.started
    assert (await pair.front.get_task(ids[2])).status.state is TaskState.CANCELED
    await pair.front.cancel(ids[1])


async def test_a_follow_up_through_the_front_runs_in_the_worker(pair: Pair) -> None:
    first = await pair.front.send(request("input which one?"))
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    answer = await pair.front.send(request("blue", task_id=first.id))
    assert isinstance(answer, Task) and answer.status.state is TaskState.COMPLETED
    assert answer.artifacts[-1].parts[0].text == "got: blue"  # type: ignore[union-attr]


async def test_return_immediately_answers_the_submitted_task_at_once(pair: Pair) -> None:
    task = await pair.front.send(request("echo later", immediately=True))
    assert isinstance(task, Task) and task.status.state is TaskState.SUBMITTED
    async with asyncio.timeout(WAIT):
        while (await pair.front.get_task(task.id)).status.state is not TaskState.COMPLETED:
            await asyncio.sleep(0.02)


async def test_a_webhook_given_with_the_message_gets_every_event_the_worker_stored(
    pair: Pair,
) -> None:
    with Receiver() as receiver:
        config = TaskPushNotificationConfig(url=receiver.url("all"), id="w")
        task = await pair.front.send(request("chunks 4"), webhooks=[Webhook(config, "1.0")])
        assert isinstance(task, Task)
        stored = await pair.store.get(task.id)
        assert stored is not None
        async with asyncio.timeout(WAIT):
            while len(receiver.accepted("all")) < stored.seq + 1:
                await asyncio.sleep(0.02)
        # The task as the front stored it, then each event in order: the worker
        # did not start before the webhook was set.
        assert [r.seq for r in receiver.accepted("all")] == list(range(stored.seq + 1))


async def test_a_waiting_task_is_no_orphan_but_its_deadline_applies() -> None:
    async with fresh_schema() as url:
        front = build_engine(
            ScriptedAgent(), PostgresStore(url), EngineConfig(runs_agents=False, lease_seconds=0.5)
        )
        await front.start()
        try:
            waiting = await front.send(request("echo", immediately=True))
            due = await front.send(
                request("echo", immediately=True, metadata={"timeoutSeconds": 0.3})
            )
            await asyncio.sleep(0.6)  # past every lease: no worker runs either
            await front.maintain_once()
            assert (await front.get_task(waiting.id)).status.state is TaskState.SUBMITTED
            failed = await front.get_task(due.id)
            assert failed.status.state is TaskState.FAILED
        finally:
            await front.aclose()


async def test_a_follow_up_waits_until_the_turn_that_asked_for_input_has_returned(
    pair: Pair,
) -> None:
    turns: list[tuple[str, float]] = []

    class Lingering(ScriptedAgent):
        async def run(self, ctx):  # type: ignore[no-untyped-def]
            turns.append(("start", asyncio.get_running_loop().time()))
            if len(ctx.history) <= 1:
                await ctx.require_input("which one?")
                await asyncio.sleep(0.5)  # stored input-required, still returning
            else:
                await ctx.complete("got it")
            turns.append(("end", asyncio.get_running_loop().time()))

    pair.engine.agents[""] = Lingering()
    async with asyncio.timeout(WAIT):
        asked = await pair.front.send(request("x"))
        assert isinstance(asked, Task) and asked.status.state is TaskState.INPUT_REQUIRED
        answered = await pair.front.send(request("blue", task_id=asked.id))
    assert isinstance(answered, Task) and answered.status.state is TaskState.COMPLETED
    assert [what for what, _ in turns] == ["start", "end", "start", "end"]


async def test_a_worker_whose_work_listener_was_cut_takes_work_and_listens_again(
    pair: Pair,
) -> None:
    import asyncpg  # type: ignore[import-untyped]

    name = f"a2ad work {os.getpid()}"
    await pair.worker.listening.wait()
    admin = await asyncpg.connect(pair.url.split("?")[0])
    try:
        cut = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = $1",
            name,
        )
        assert cut == 1
        async with asyncio.timeout(WAIT):
            task = await pair.front.send(request("echo after the cut"))
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            while not await admin.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name
            ):
                await asyncio.sleep(0.05)
    finally:
        await admin.close()
