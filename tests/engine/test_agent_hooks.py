"""An agent's ``start`` and ``stop`` hooks: once each, around every turn the
server runs; a failing start stops the server from starting, naming the agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from a2ad import Agent, MemoryStore, Task, TaskState
from a2ad.agent import TaskContext
from a2ad.engine import AgentStartError
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig

from ..served import run_a2ad
from .requests import WAIT, request


class Keeps(Agent):
    """Makes a shared thing at start, uses it in every turn, closes it at stop."""

    name = "keeps"

    def __init__(self) -> None:
        self.said: list[str] = []
        self.shared: list[str] | None = None

    async def start(self) -> None:
        self.said.append("start")
        self.shared = []

    async def run(self, ctx: TaskContext) -> None:
        assert self.shared is not None, "a turn ran before start"
        self.shared.append(ctx.task_id)
        self.said.append("run")
        if ctx.text == "slow":
            await asyncio.sleep(0.2)
        await ctx.complete(f"turn {len(self.shared)}")

    async def stop(self) -> None:
        self.said.append("stop")
        self.shared = None


async def test_start_before_any_turn_and_stop_after_the_last() -> None:
    agent = Keeps()
    engine = build_engine(agent, MemoryStore(), EngineConfig(shutdown_grace=5))
    await engine.start()
    await engine.start()  # again: no second start
    first: Any = await asyncio.wait_for(engine.send(request("hi")), WAIT)
    assert isinstance(first, Task) and first.status.state is TaskState.COMPLETED
    slow = asyncio.ensure_future(engine.send(request("slow")))
    await asyncio.sleep(0.05)
    await engine.aclose(graceful=True)  # waits for the slow turn, then stops the agent
    assert (await slow).status.state is TaskState.COMPLETED
    assert agent.said == ["start", "run", "run", "stop"]


class Broken(Agent):
    name = "broken"

    async def start(self) -> None:
        raise ConnectionError("the model endpoint refused")


async def test_a_failing_start_is_an_error_naming_the_agent_and_stops_the_others() -> None:
    keeps = Keeps()
    engine = build_engine({"first": keeps, "second": Broken()}, MemoryStore())
    with pytest.raises(AgentStartError, match=r"broken \(second\) failed to start: Connection"):
        await engine.start()
    assert keeps.said == ["start", "stop"]
    await engine.aclose()


def test_a2ad_serve_exits_with_the_agents_start_error(tmp_path: Path) -> None:
    (tmp_path / "broken_agent.py").write_text(
        "from a2ad import Agent\n\n"
        "class Broken(Agent):\n"
        "    name = 'broken'\n\n"
        "    async def start(self):\n"
        "        raise RuntimeError('no API key for the model')\n\n"
        "agent = Broken()\n"
    )
    done = run_a2ad(
        "serve",
        "--port",
        "0",
        "--store",
        "memory",
        "--agent",
        "broken_agent",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the agent broken failed to start: RuntimeError: no API key" in done.stderr
    assert "Traceback" not in done.stderr
