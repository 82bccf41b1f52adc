"""Any command as an agent (adapters/command.py): real processes, served by a
real app. Its standard output streamed as one artifact's chunks, its input the
message's text or JSON, a crash failing the task with its standard error (kept
as an internal part), a cancel stopping the whole process tree, its bounds on
output and time, and ``a2ad serve --agent exec:...`` end to end."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from a2ad import A2AApp, create_app
from a2ad.adapters.command import CommandAgent

from ..conftest import wait_for
from ..jsonrpc import answer, rpc_body
from ..served import Served

PY = shlex.quote(sys.executable)
V1 = {"A2A-Version": "1.0"}


def script(code: str) -> str:
    return f"{PY} -c {shlex.quote(code)}"


async def _app(agent: CommandAgent) -> AsyncIterator[httpx.AsyncClient]:
    app: A2AApp = create_app(agent)
    await app.lifetime.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
            yield http
    finally:
        await app.aclose()


async def _call(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
    got = answer(await http.post("/", json=rpc_body(method, params), headers=V1))
    assert "error" not in got, got
    return got["result"]


def _send(text: str, **configuration: Any) -> dict[str, Any]:
    message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": message, **({"configuration": configuration} if configuration else {})}


async def _task(http: httpx.AsyncClient, task_id: str, done: bool = True) -> Any:
    async def finished() -> bool:
        task = await _call(http, "GetTask", {"id": task_id})
        return task["status"]["state"] not in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED")

    if done:
        await wait_for(finished, timeout=20)
    return await _call(http, "GetTask", {"id": task_id})


async def test_its_input_is_the_text_and_each_line_of_output_a_chunk() -> None:
    code = "import sys\nfor word in sys.stdin.read().split(): print(word.upper(), flush=True)"
    async for http in _app(CommandAgent(script(code))):
        task = (await _call(http, "SendMessage", _send("one two three")))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        (artifact,) = task["artifacts"]
        assert artifact["name"] == "output"
        assert [p["text"] for p in artifact["parts"]] == ["ONE", "TWO", "THREE"]


async def test_output_is_streamed_as_it_comes_and_the_last_line_says_so() -> None:
    # Its last line comes just before it ends: that chunk is marked the last.
    code = "import time\nfor n in range(3):\n print(n, flush=True)\n if n < 2: time.sleep(0.6)"
    # A real server process: the command is started by its loop, as in production.
    with Served("--agent", f"exec:{script(code)}", "--store", "memory") as served:
        body = rpc_body("SendStreamingMessage", _send("go"))
        seen: list[tuple[float, Any]] = []
        loop = asyncio.get_running_loop()
        async with (
            httpx.AsyncClient(base_url=served.url, timeout=20) as http,
            http.stream("POST", "/", json=body, headers=V1) as response,
        ):
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    seen.append((loop.time(), json.loads(line[5:])["result"]))
    chunks = [(t, r["artifactUpdate"]) for t, r in seen if "artifactUpdate" in r]
    assert [c["artifact"]["parts"][0]["text"] for _, c in chunks] == ["0", "1", "2"]
    assert [c.get("lastChunk", False) for _, c in chunks] == [False, False, True]
    # Each line arrived while the command was still running, not all at its end.
    assert chunks[1][0] - chunks[0][0] > 0.3
    assert seen[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_exec_json_gives_the_message_and_its_task_as_json() -> None:
    code = (
        "import json, sys\nm = json.load(sys.stdin)\n"
        "print(m['taskId'] == m['message']['taskId'], m['message']['parts'][0]['text'])"
    )
    async for http in _app(CommandAgent(script(code), json_input=True)):
        task = (await _call(http, "SendMessage", _send("hello there")))["task"]
        assert task["artifacts"][0]["parts"][0]["text"] == "True hello there"


async def test_a_crash_fails_the_task_with_the_tail_of_its_standard_error() -> None:
    code = (
        "import sys\nprint('partial', flush=True)\n"
        "sys.stderr.write('it broke: no disk\\n')\nsys.exit(3)"
    )
    agent = CommandAgent(script(code))
    app = create_app(agent)
    await app.lifetime.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
            task = (await _call(http, "SendMessage", _send("go")))["task"]
            assert task["status"]["state"] == "TASK_STATE_FAILED"
            said = task["status"]["message"]["parts"][0]["text"]
            assert "exited with status 3" in said and "it broke: no disk" in said
            # Standard error is an internal part: not shown to an ordinary caller...
            assert [a["name"] for a in task["artifacts"]] == ["output"]
        # ...but kept, as operators see it.
        stored = await app.engine.store.get(task["id"])
        assert stored is not None
        names = [a.name for a in stored.task.artifacts]
        assert names == ["output", "stderr"]
    finally:
        await app.aclose()


async def test_a_command_that_cannot_run_fails_the_task_saying_so() -> None:
    async for http in _app(CommandAgent("no-such-command-a2ad --x")):
        task = (await _call(http, "SendMessage", _send("go")))["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert (
            "can't run `no-such-command-a2ad --x`" in task["status"]["message"]["parts"][0]["text"]
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone but for its entry; /proc says which.
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone meanwhile
        return False


async def test_a_cancel_stops_the_command_and_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # The command starts a child that ignores nothing, then waits on it.
    command = f"sh -c 'sleep 300 & echo $$ $! > {pids}; wait'"
    async for http in _app(CommandAgent(command, kill_grace=1.0)):
        task = (await _call(http, "SendMessage", _send("go", returnImmediately=True)))["task"]
        await wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, timeout=10)
        shell, child = (int(p) for p in pids.read_text().split())
        assert _alive(shell) and _alive(child)
        canceled = await _call(http, "CancelTask", {"id": task["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        await wait_for(lambda: not _alive(shell) and not _alive(child), timeout=5)  # noqa: B023


async def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    started = tmp_path / "started"
    code = (
        "import signal, time, pathlib, os\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"pathlib.Path({str(started)!r}).write_text(str(os.getpid()))\ntime.sleep(300)"
    )
    async for http in _app(CommandAgent(script(code), kill_grace=0.5)):
        task = (await _call(http, "SendMessage", _send("go", returnImmediately=True)))["task"]
        await wait_for(lambda: started.exists() and started.read_text().strip(), timeout=10)
        pid = int(started.read_text())
        await _call(http, "CancelTask", {"id": task["id"]})
        await asyncio.sleep(0.2)
        assert _alive(pid)  # SIGTERM ignored: still there within the grace
        await wait_for(lambda: not _alive(pid), timeout=5)  # noqa: B023


async def test_output_past_its_bound_stops_the_command_and_fails_the_task() -> None:
    code = "while True: print('x' * 100)"
    async for http in _app(CommandAgent(script(code), max_output_bytes=10_000)):
        task = (await _call(http, "SendMessage", _send("go")))["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        said = task["status"]["message"]["parts"][0]["text"]
        assert "wrote more than 10000 bytes to standard output and was stopped" in said


async def test_a_run_past_its_time_bound_is_stopped_and_fails_the_task() -> None:
    async for http in _app(CommandAgent("sleep 30", max_seconds=0.5, kill_grace=0.5)):
        task = (await _call(http, "SendMessage", _send("go")))["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert (
            "ran for more than 0.5 s and was stopped"
            in task["status"]["message"]["parts"][0]["text"]
        )


def test_a2ad_serve_runs_a_command_named_or_alone() -> None:
    upper = script("import sys; print(sys.stdin.read().upper())")
    specs = [
        ("--agent", f"exec:{upper}"),
        ("--agent", "up=exec:tr a-z A-Z", "--agent", "echo=echo"),
    ]
    for flags in specs:
        with Served(*flags, "--store", "memory") as served:
            path = "/agents/up/" if "up=" in flags[1] else "/"
            with httpx.Client(base_url=served.url) as http:
                body = rpc_body("SendMessage", _send("shout --mode=loud"))
                task = answer(http.post(path, json=body, headers=V1))["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            assert task["artifacts"][0]["parts"][0]["text"] == "SHOUT --MODE=LOUD"


def test_serves_task_timeout_stops_a_command_and_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"exec:sh -c 'sleep 300 & echo $$ $! > {pids}; wait'"
    with Served("--agent", command, "--store", "memory", "--task-timeout", "1s") as served:
        with httpx.Client(base_url=served.url, timeout=30) as http:
            body = rpc_body("SendMessage", _send("go"))  # waits for the task's end
            task = answer(http.post("/", json=body, headers=V1))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED", task
    assert "deadline" in task["status"]["message"]["parts"][0]["text"]
    shell, child = (int(p) for p in pids.read_text().split())
    deadline = time.monotonic() + 10
    while _alive(shell) or _alive(child):
        assert time.monotonic() < deadline, "the command outlived its task's deadline"
        time.sleep(0.05)
