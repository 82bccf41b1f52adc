"""The bus shared by processes (engine/signal_bus.py), with two engines over one
store in one process and an in-process hub carrying the signals: what one
engine stores reaches the other's subscribers in order with the same numbers,
a cancel on one stops the agent on the other, and lost signals are made up for
after a reconnect. (Across real processes: tests/multi/.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from a2ad import Engine, MemoryStore, TaskState
from a2ad.engine.build import build_engine
from a2ad.engine.signal_bus import SignalBus
from a2ad.protocol.types import Seq, TaskId
from a2ad.store.signals import SignalReceiver, Signals

from ..scripted import ScriptedAgent
from .requests import WAIT, request


class Hub:
    """Carries signals between the buses of one process, like NOTIFY between
    instances; ``connected`` False loses them, as a dropped connection would."""

    def __init__(self) -> None:
        self.receivers: list[SignalReceiver] = []
        self.connected = True

    def send(self, sender: SignalReceiver, deliver: str, *args: object) -> None:
        if not self.connected:
            return
        for receiver in self.receivers:
            if receiver is not sender:
                loop = asyncio.get_running_loop()
                loop.call_soon(getattr(receiver, deliver), *args)


class HubSignals(Signals):
    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.receiver: SignalReceiver | None = None

    async def start(self, receiver: SignalReceiver) -> None:
        self.receiver = receiver
        self.hub.receivers.append(receiver)

    def stored(self, task_id: TaskId, seq: Seq) -> None:
        assert self.receiver is not None
        self.hub.send(self.receiver, "stored", task_id, seq)

    def cancel(self, task_id: TaskId) -> None:
        assert self.receiver is not None
        self.hub.send(self.receiver, "cancelled", task_id)

    async def aclose(self) -> None:
        if self.receiver in self.hub.receivers:
            self.hub.receivers.remove(self.receiver)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Engine, Engine, ScriptedAgent, Hub]]:
    store = MemoryStore()
    hub = Hub()
    agent = ScriptedAgent()
    a = build_engine(agent, store, bus=SignalBus(store, HubSignals(hub)))
    b = build_engine(ScriptedAgent(), store, bus=SignalBus(store, HubSignals(hub)))
    await a.start()
    await b.start()
    yield a, b, agent, hub
    await b.shutdown(graceful=False)
    await a.aclose()
    await b.bus.aclose()


async def test_subscriber_elsewhere_gets_every_event_in_order_with_the_same_numbers(
    pair: tuple[Engine, Engine, ScriptedAgent, Hub],
) -> None:
    a, b, _, _ = pair
    own = await a.stream(request("input which one?"))
    first = await own.next(WAIT)
    assert first is not None
    task_id = first[1].id  # type: ignore[union-attr]
    seen_here: list[tuple[int | None, object]] = []
    while (step := await own.next(WAIT)) is not None:
        seen_here.append((step[0], step[1]))
    follower = await b.subscribe(task_id)
    head = await follower.next(WAIT)
    assert head is not None and head[0] == seen_here[-1][0]
    # The follow-up runs on A; B's subscriber sees its events as A numbered them.
    answer = await a.stream(request("blue", task_id=task_id))
    mine = []
    while (step := await answer.next(WAIT)) is not None:
        mine.append((step[0], step[1]))
    theirs = []
    while (step := await follower.next(WAIT)) is not None:
        theirs.append((step[0], step[1]))
    # The follow-up's own stream starts with the task as it resumed (the status
    # event the subscriber gets as such), then both see the same events.
    assert [seq for seq, _ in theirs] == [seq for seq, _ in mine]
    assert theirs[1:] == mine[1:]
    assert theirs[-1][1].status.state is TaskState.COMPLETED  # type: ignore[union-attr]


async def test_cancel_on_one_engine_stops_the_agent_on_the_other_and_ends_its_stream(
    pair: tuple[Engine, Engine, ScriptedAgent, Hub],
) -> None:
    a, b, agent, _ = pair
    stream = await a.stream(request("hang"))
    first = await stream.next(WAIT)
    assert first is not None
    task_id = first[1].id  # type: ignore[union-attr]
    async with asyncio.timeout(WAIT):
        while task_id not in agent.started:
            await asyncio.sleep(0.005)
    canceled = await b.cancel(task_id)
    assert canceled.status.state is TaskState.CANCELED
    last = None
    while (step := await stream.next(WAIT)) is not None:
        last = step
    assert last is not None and last[2]
    assert last[1].status.state is TaskState.CANCELED  # type: ignore[union-attr]
    async with asyncio.timeout(WAIT):
        while task_id not in agent.cancelled:
            await asyncio.sleep(0.005)


async def test_signals_lost_while_disconnected_are_made_up_on_reconnect(
    pair: tuple[Engine, Engine, ScriptedAgent, Hub],
) -> None:
    a, b, _, hub = pair
    task = await a.send(request("input which one?"))
    follower = await b.subscribe(task.id)  # type: ignore[union-attr]
    assert await follower.next(WAIT) is not None
    hub.connected = False
    await a.send(request("blue", task_id=task.id))  # type: ignore[union-attr]
    with pytest.raises(TimeoutError):
        await follower.next(0.2)
    hub.connected = True
    b.bus.reconnected()  # type: ignore[attr-defined]
    states = []
    while (step := await follower.next(WAIT)) is not None:
        states.append(getattr(step[1], "status", None))
    assert states[-1] is not None and states[-1].state is TaskState.COMPLETED


async def test_agent_of_a_task_canceled_while_signals_were_cut_off_stops_on_reconnect(
    pair: tuple[Engine, Engine, ScriptedAgent, Hub],
) -> None:
    a, b, agent, hub = pair
    task = await a.send(request("hang", immediately=True))
    async with asyncio.timeout(WAIT):
        while task.id not in agent.started:  # type: ignore[union-attr]
            await asyncio.sleep(0.005)
    hub.connected = False
    await b.cancel(task.id)  # type: ignore[union-attr]
    await asyncio.sleep(0.1)
    assert task.id not in agent.cancelled  # type: ignore[union-attr]
    hub.connected = True
    a.bus.reconnected()  # type: ignore[attr-defined]
    async with asyncio.timeout(WAIT):
        while task.id not in agent.cancelled:  # type: ignore[union-attr]
            await asyncio.sleep(0.005)
