"""CancelTask / tasks/cancel: what the caller gets back, how fast the agent stops,
what streams see, and how a cancel racing the agent's own completion resolves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
import pytest

from a2ad import Agent, EchoAgent, TaskContext, TaskState, create_app
from a2ad.protocol.errors import TaskNotCancelableError

from ..conftest import LiveServer, Rpc, wait_for
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from ..server.sse_client import Dialect, body, frames, kind, state

T = TypeVar("T")


@pytest.fixture(params=[True, False], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> Dialect:
    return Dialect(request.param)


async def call(rpc: Rpc, d: Dialect, op: str, params: Any) -> dict[str, Any]:
    return await rpc(d.method(op), params, v1=d.v1)


async def start_hanging(rpc: Rpc, d: Dialect, agent: ScriptedAgent) -> str:
    r = await call(rpc, d, "send", d.message("hang x", immediately=True))
    task_id: str = d.task_of(r["result"])["id"]
    await wait_for(lambda: task_id in agent.started)
    return task_id


async def test_cancel_of_working_task_returns_it_canceled_and_stops_agent_at_once(
    rpc: Rpc, d: Dialect, agent: ScriptedAgent
) -> None:
    task_id = await start_hanging(rpc, d, agent)
    asked = time.monotonic()
    r = await call(rpc, d, "cancel", {"id": task_id})
    answered = time.monotonic()

    task = r["result"]
    assert task["id"] == task_id
    assert d.state_word(task) == "canceled"
    got = await call(rpc, d, "get", {"id": task_id})
    assert d.state_word(got["result"]) == "canceled"
    await wait_for(lambda: task_id in agent.cancelled, timeout=1.0)
    assert asked <= agent.cancelled[task_id]
    assert abs(agent.cancelled[task_id] - answered) < 0.1


async def test_cancel_of_input_required_task_cancels_it(rpc: Rpc, d: Dialect) -> None:
    r = await call(rpc, d, "send", d.message("input which one?"))
    task = d.task_of(r["result"])
    assert d.state_word(task) == "input-required"
    c = await call(rpc, d, "cancel", {"id": task["id"]})
    assert d.state_word(c["result"]) == "canceled"
    got = await call(rpc, d, "get", {"id": task["id"]})
    assert d.state_word(got["result"]) == "canceled"
    # A canceled task takes no more answers.
    late = await call(rpc, d, "send", d.message("blue", taskId=task["id"]))
    assert late["error"]["code"] == -32004


async def test_second_cancel_is_not_cancelable_already_canceled(
    rpc: Rpc, d: Dialect, agent: ScriptedAgent
) -> None:
    task_id = await start_hanging(rpc, d, agent)
    first = await call(rpc, d, "cancel", {"id": task_id})
    assert d.state_word(first["result"]) == "canceled"
    second = await call(rpc, d, "cancel", {"id": task_id})
    assert "result" not in second
    assert second["error"]["code"] == -32002
    assert second["error"]["message"] == "Task not cancelable: already canceled"


async def test_cancel_of_unknown_task_is_task_not_found(rpc: Rpc, d: Dialect) -> None:
    r = await call(rpc, d, "cancel", {"id": "no-such-task"})
    assert r["error"]["code"] == -32001
    assert "no-such-task" in r["error"]["message"]


async def test_cancel_ends_in_flight_stream_with_final_canceled_status(
    live: LiveServer, d: Dialect, agent: ScriptedAgent
) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        payload = rpc_body(d.method("stream"), d.message("hang x"), 3)
        async with http.stream("POST", "/", json=payload, headers=d.headers) as r:
            it = frames(r)
            first = await anext(it)
            working = await anext(it)
            assert state(working.result, d.v1) == "working"
            task_id = body(first.result, d.v1)["id"]
            c = await http.post(
                "/", json=rpc_body(d.method("cancel"), {"id": task_id}), headers=d.headers
            )
            assert d.state_word(c.json()["result"]) == "canceled"
            rest = [f async for f in it]
    assert [kind(f.result, d.v1) for f in rest] == ["status"]
    assert state(rest[0].result, d.v1) == "canceled"
    assert rest[0].id is not None and working.id is not None and rest[0].id > working.id
    if not d.v1:
        assert rest[0].result["final"] is True
    assert task_id in agent.cancelled


async def test_agent_emits_after_completion_are_dropped_and_task_stays_completed(
    rpc: Rpc, agent: ScriptedAgent
) -> None:
    r = await rpc("message/send", {"message": {"role": "user", "parts": [{"text": "late"}]}})
    task = r["result"]
    assert task["status"]["state"] == "completed"
    await wait_for(lambda: len(agent.late_results) == 3)
    assert agent.late_results == [False, False, False]  # working, artifact, fail
    got = await rpc("tasks/get", {"id": task["id"]})
    assert got["result"]["status"]["state"] == "completed"
    assert got["result"]["status"]["message"]["parts"][0]["text"] == "first"


async def test_concurrent_double_cancels_of_many_tasks_each_cancel_exactly_once(
    rpc: Rpc, agent: ScriptedAgent
) -> None:
    d = Dialect(True)
    ids = [await start_hanging(rpc, d, agent) for _ in range(20)]
    answers = await asyncio.gather(
        *[call(rpc, d, "cancel", {"id": task_id}) for task_id in ids for _ in range(2)]
    )
    for n, task_id in enumerate(ids):
        pair = answers[2 * n : 2 * n + 2]
        won = [a for a in pair if "result" in a]
        lost = [a for a in pair if "error" in a]
        assert len(won) == 1 and len(lost) == 1, pair
        assert won[0]["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        assert lost[0]["error"]["code"] == -32002
        got = await call(rpc, d, "get", {"id": task_id})
        assert got["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert set(agent.cancelled) >= set(ids)


class RacingAgent(Agent):
    """Works, then completes as soon as the test releases it; says when its run ended."""

    name = "racing"

    def __init__(self) -> None:
        self.release: dict[str, asyncio.Event] = {}
        self.completed: dict[str, bool] = {}
        self.ended: dict[str, asyncio.Event] = {}

    def ended_event(self, task_id: str) -> asyncio.Event:
        return self.ended.setdefault(task_id, asyncio.Event())

    async def run(self, ctx: TaskContext) -> None:
        release = self.release.setdefault(ctx.task_id, asyncio.Event())
        try:
            await ctx.working()
            await release.wait()
            self.completed[ctx.task_id] = await ctx.complete("done")
        finally:
            self.ended_event(ctx.task_id).set()


async def _turns(count: int) -> None:
    # Staggers the two sides of a race by whole loop turns. Nothing is expected to
    # have happened after them: each turn only shifts where the race is met.
    for _ in range(count):
        await asyncio.sleep(0)


CANCEL_FIRST = (-1, 0)  # cancel returns before the agent is released
COMPLETE_FIRST = (0, -1)  # the agent's run has ended before cancel is asked
# (turns before the cancel, turns before the release). Today the release wins from
# about two turns ahead; the cancel side reaches further so that a few more awaits on
# either path still leave races that go each way.
RACES = [(c, r) for c in range(8) for r in range(4)]


async def test_cancel_racing_completion_has_exactly_one_winner_and_the_state_holds() -> None:
    agent = RacingAgent()
    app = create_app(agent)
    engine = app.engine
    schedules = [CANCEL_FIRST, COMPLETE_FIRST, *RACES]
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
        ) as client:
            rpc = Rpc(client)
            d = Dialect(True)
            ids = []
            for _ in schedules:
                r = await call(rpc, d, "send", d.message("go", immediately=True))
                ids.append(r["result"]["task"]["id"])

            async def all_working() -> bool:
                tasks = [await engine.get_task(task_id) for task_id in ids]
                return all(t.status.state is TaskState.WORKING for t in tasks)

            await wait_for(all_working)

            async def cancel(task_id: str) -> TaskState | None:
                try:
                    return (await engine.cancel(task_id)).status.state
                except TaskNotCancelableError as exc:
                    assert str(exc) == "Task not cancelable: already completed"
                    return None

            async def release(task_id: str) -> None:
                agent.release[task_id].set()
                async with asyncio.timeout(3):
                    await agent.ended_event(task_id).wait()

            async def later(turns: int, step: Coroutine[Any, Any, T]) -> T:
                await _turns(turns)
                return await step

            outcomes: dict[str, TaskState] = {}
            for task_id, schedule in zip(ids, schedules, strict=True):
                if schedule == CANCEL_FIRST:
                    canceled = await cancel(task_id)
                    await release(task_id)
                    assert canceled is TaskState.CANCELED
                elif schedule == COMPLETE_FIRST:
                    await release(task_id)
                    canceled = await cancel(task_id)
                    assert canceled is None
                else:
                    cancel_turns, release_turns = schedule
                    canceled, _ = await asyncio.gather(
                        later(cancel_turns, cancel(task_id)),
                        later(release_turns, release(task_id)),
                    )
                now = (await engine.get_task(task_id)).status.state
                if canceled is TaskState.CANCELED:
                    assert now is TaskState.CANCELED
                    assert agent.completed.get(task_id) is not True
                else:
                    assert canceled is None
                    assert now is TaskState.COMPLETED
                    assert agent.completed[task_id] is True
                outcomes[task_id] = now

            # Shutdown returns once nothing the engine runs for these tasks is left,
            # so a late write from either side would have landed by then.
            await engine.shutdown()
            for task_id, final in outcomes.items():
                assert (await engine.get_task(task_id)).status.state is final
            # Both winners were met (the two ordered schedules see to it), so both
            # branches of the checks above ran.
            assert set(outcomes.values()) == {TaskState.CANCELED, TaskState.COMPLETED}
    finally:
        await app.aclose()


class WatchedEcho(EchoAgent):
    """The echo agent, recording which runs started and how each ended."""

    def __init__(self) -> None:
        self.started: set[str] = set()
        self.ended: dict[str, str] = {}

    async def run(self, ctx: TaskContext) -> None:
        self.started.add(ctx.task_id)
        try:
            await super().run(ctx)
        except asyncio.CancelledError:
            self.ended[ctx.task_id] = "cancelled"
            raise
        self.ended[ctx.task_id] = "returned"


async def test_echo_sleep_is_stopped_by_the_time_cancel_returns() -> None:
    agent = WatchedEcho()
    app = create_app(agent)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
        ) as client:
            rpc = Rpc(client)
            r = await rpc(
                "message/send",
                {
                    "message": {"role": "user", "parts": [{"text": "sleep:30 hi"}]},
                    "configuration": {"blocking": False},
                },
            )
            task_id = r["result"]["id"]

            async def working() -> bool:
                got = await rpc("tasks/get", {"id": task_id})
                return bool(got["result"]["status"]["state"] == "working")

            await wait_for(working)
            assert task_id in agent.started and task_id not in agent.ended

            asked = time.monotonic()
            c = await rpc("tasks/cancel", {"id": task_id})
            took = time.monotonic() - asked
            assert agent.ended.get(task_id) == "cancelled"
            assert c["result"]["status"]["state"] == "canceled"
            assert took < 0.1
            got = await rpc("tasks/get", {"id": task_id})
            assert got["result"]["status"]["state"] == "canceled"
            assert "artifacts" not in got["result"]
    finally:
        await app.aclose()
