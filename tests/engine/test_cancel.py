"""CancelTask / tasks/cancel: what the caller gets back, how fast the agent stops,
what streams see, and how a cancel racing the agent's own completion resolves."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from a2ad import Agent, TaskContext, TaskState, create_app
from a2ad.protocol.errors import TaskNotCancelableError

from ..conftest import LiveServer, Rpc, wait_for
from ..scripted import ScriptedAgent
from ..server.sse_client import Dialect, body, frames, kind, rpc_body, state


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
    await wait_for(lambda: len(agent.late_results) == 2)
    assert agent.late_results == [False, False]
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
    """Works, then completes as soon as the test releases it."""

    name = "racing"

    def __init__(self) -> None:
        self.release: dict[str, asyncio.Event] = {}
        self.completed: dict[str, bool] = {}

    async def run(self, ctx: TaskContext) -> None:
        release = self.release.setdefault(ctx.task_id, asyncio.Event())
        await ctx.working()
        await release.wait()
        self.completed[ctx.task_id] = await ctx.complete("done")


async def _yield(times: int) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


async def test_cancel_racing_completion_has_exactly_one_winner_and_the_state_holds() -> None:
    agent = RacingAgent()
    app = create_app(agent)
    engine = app.engine
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
        ) as client:
            rpc = Rpc(client)
            d = Dialect(True)
            ids = []
            for _ in range(32):
                r = await call(rpc, d, "send", d.message("go", immediately=True))
                ids.append(r["result"]["task"]["id"])
            for task_id in ids:
                while (await engine.get_task(task_id)).status.state is not TaskState.WORKING:
                    await asyncio.sleep(0.005)

            async def cancel(task_id: str, delay: int) -> TaskState | None:
                await _yield(delay)
                try:
                    return (await engine.cancel(task_id)).status.state
                except TaskNotCancelableError as exc:
                    assert str(exc) == "Task not cancelable: already completed"
                    return None

            async def complete(task_id: str, delay: int) -> None:
                await _yield(delay)
                agent.release[task_id].set()
                await wait_for(lambda: not engine.runner.is_running(task_id), timeout=3.0)

            outcomes: dict[str, TaskState] = {}
            for n, task_id in enumerate(ids):
                canceled, _ = await asyncio.gather(
                    cancel(task_id, n % 4), complete(task_id, (n // 4) % 4)
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

            await asyncio.sleep(0.05)
            for task_id, final in outcomes.items():
                assert (await engine.get_task(task_id)).status.state is final
            # Both orders happened, so the race was really run both ways.
            assert set(outcomes.values()) == {TaskState.CANCELED, TaskState.COMPLETED}
    finally:
        await app.aclose()


async def test_echo_sleep_is_stopped_by_the_time_cancel_returns() -> None:
    app = create_app()
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
            for _ in range(1000):
                got = await rpc("tasks/get", {"id": task_id})
                if got["result"]["status"]["state"] == "working":
                    break
                await asyncio.sleep(0.005)
            assert app.engine.runner.is_running(task_id)

            asked = time.monotonic()
            c = await rpc("tasks/cancel", {"id": task_id})
            took = time.monotonic() - asked
            assert not app.engine.runner.is_running(task_id)
            assert c["result"]["status"]["state"] == "canceled"
            assert took < 0.1
            got = await rpc("tasks/get", {"id": task_id})
            assert got["result"]["status"]["state"] == "canceled"
            assert "artifacts" not in got["result"]
    finally:
        await app.aclose()
