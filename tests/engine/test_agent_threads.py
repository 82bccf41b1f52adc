"""Blocking agent code runs in as many threads at once as the engine is given
(``agent_threads``; ``a2ad serve`` gives 64 by default), not in the six that
Python's default executor has on two cores: twelve plain sync functions, each
waiting until all twelve are running, all finish. The threads end with the
engine."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx

from a2ad import MemoryStore, Task, TaskState
from a2ad.adapters import FunctionAgent
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig

from ..served import Served
from .requests import request

TASKS = 12  # twice what Python's default executor runs at once on two cores


def _threads_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("a2ad-agent")]


async def test_twelve_blocking_function_tasks_run_at_once_and_their_threads_end() -> None:
    all_in = threading.Barrier(TASKS, timeout=10)  # broken, and so failed, unless all run

    def meet(text: str) -> str:
        all_in.wait()
        return f"met {text}"

    engine = build_engine(FunctionAgent(meet), MemoryStore(), EngineConfig(agent_threads=TASKS))
    await engine.start()
    try:
        sent = [engine.send(request(str(i))) for i in range(TASKS)]
        done = await asyncio.wait_for(asyncio.gather(*sent), 20)
        for task in done:
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED, task
        assert len(_threads_alive()) == TASKS
    finally:
        await engine.aclose()
    deadline = time.monotonic() + 5
    while _threads_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert _threads_alive() == []


AGENT = f"""
import threading

all_in = threading.Barrier({TASKS}, timeout=10)


def meet(text):
    all_in.wait()  # raises BrokenBarrierError (the task fails) unless all run at once
    return "met " + text
"""


async def test_serve_runs_twelve_blocking_function_tasks_at_once_by_default(
    tmp_path: Path,
) -> None:
    (tmp_path / "meeting.py").write_text(AGENT)
    with Served("--agent", "meeting:meet", cwd=tmp_path) as served:
        url = served.url + "/"
        async with httpx.AsyncClient(timeout=30) as http:

            async def send(i: int) -> str:
                message = {"role": "user", "parts": [{"text": str(i)}], "messageId": f"m{i}"}
                body = {"jsonrpc": "2.0", "id": i, "method": "message/send"}
                r = await http.post(url, json={**body, "params": {"message": message}})
                return str(r.json()["result"]["status"]["state"])

            states = await asyncio.gather(*(send(i) for i in range(TASKS)))
        assert states == ["completed"] * TASKS, served.output
