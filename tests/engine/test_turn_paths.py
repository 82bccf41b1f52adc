"""The walk of a send and of a cancel on a server that runs its agents: they
never enter the queued turns' code (a front's: queued_turns.py, remote.py),
nor the push code when the task has no webhook (push.py). The modules entered
are recorded with ``sys.setprofile`` on the event loop's thread, where the
request and the agent's turn both run."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

import a2ad
from a2ad import MemoryStore, Task, TaskState
from a2ad.agents.echo import EchoAgent
from a2ad.engine.build import build_engine

from .requests import WAIT, request, wait_for_state

PACKAGE = Path(a2ad.__file__).parent
NOT_ON_A_LOCAL_SEND = {"engine/queued_turns.py", "engine/remote.py", "engine/push.py"}


async def entered(operation: Callable[[], Awaitable[Any]]) -> set[str]:
    """The a2ad modules (paths under the package) whose functions run while
    ``operation`` is awaited."""
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            path = Path(frame.f_code.co_filename)
            if path.is_relative_to(PACKAGE):
                seen.add(path.relative_to(PACKAGE).as_posix())

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        await operation()
    finally:
        sys.setprofile(before)
    return seen


async def test_a_blocking_send_runs_its_turn_here_without_the_queued_or_push_code() -> None:
    engine = build_engine(EchoAgent(), MemoryStore())
    await engine.start()
    try:
        await engine.send(request("warm up"))  # first calls (imports, caches) out of the way
        answers: list[Any] = []

        async def send() -> None:
            answers.append(await engine.send(request("hello")))

        modules = await entered(send)
        assert isinstance(answers[0], Task) and answers[0].status.state is TaskState.COMPLETED
        assert {"engine/engine.py", "engine/local_turns.py", "engine/writer.py"} <= modules
        assert not modules & NOT_ON_A_LOCAL_SEND, sorted(modules)
    finally:
        await engine.aclose()


async def test_a_cancel_stops_the_agent_here_without_the_queued_or_push_code() -> None:
    engine = build_engine(EchoAgent(), MemoryStore())
    await engine.start()
    try:
        task = await engine.send(request("sleep:30 stopped first", immediately=True))
        assert isinstance(task, Task)
        await wait_for_state(engine, task.id, TaskState.WORKING)
        canceled: list[Task] = []

        async def cancel() -> None:
            canceled.append(await asyncio.wait_for(engine.cancel(task.id), WAIT))

        modules = await entered(cancel)
        assert canceled[0].status.state is TaskState.CANCELED
        assert {"engine/engine.py", "engine/ending.py"} <= modules
        assert not modules & NOT_ON_A_LOCAL_SEND, sorted(modules)
    finally:
        await engine.aclose()
