"""``a2ad serve --workers 2``, end to end: real processes sharing one port on a
SQLite file and on a fresh PostgreSQL schema. Every operation works whichever
process it reaches; a process that is killed is started again and its tasks are
failed within the lease; Ctrl-C stops them all. The last two tests end their
server; the rest share it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..postgres import fresh_schema_sync
from ..served import Served, run_a2ad
from .conftest import (
    AGENT,
    START_WAIT,
    WAIT,
    Workers,
    one_connection,
    result_of,
    send_params,
    state_of,
    status_text,
)

LEASE = 2.0  # --lease-seconds: a killed process's tasks fail within this (and a round)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def workers(request: pytest.FixtureRequest) -> Iterator[Workers]:
    with a_store(request.param) as (store, flags):
        served = Served(
            "--workers",
            "2",
            "--store",
            store,
            *AGENT,
            "--lease-seconds",
            str(LEASE),
            "--shutdown-grace",
            "0",
            *flags,
            env={"PYTHONUNBUFFERED": "1"},
        )
        with served:
            yield Workers(served, request.param, store)


@contextlib.contextmanager
def a_store(backend: str) -> Iterator[tuple[str, list[str]]]:
    """(store URL, flags it needs) of a fresh SQLite file or PostgreSQL schema."""
    with tempfile.TemporaryDirectory(prefix="a2ad-workers-") as folder:
        if backend == "sqlite":
            yield f"sqlite:///{folder}/tasks.db", []
        else:
            with fresh_schema_sync() as url:
                yield url, ["--secret-key-file", f"{folder}/a2ad.key"]


async def test_the_banner_says_two_processes_and_requests_reach_both(workers: Workers) -> None:
    assert "2 processes" in workers.served.output
    pids = set()
    async with asyncio.timeout(WAIT):
        while len(pids) < 2:
            async with one_connection() as http:  # a new connection each time
                pids.add(await workers.pid(http))
    assert workers.served.proc.pid not in pids  # the parent serves nothing itself


async def test_get_and_list_on_one_process_show_a_task_of_the_other(workers: Workers) -> None:
    async with workers.reach_each() as reach:
        (a, on_a), (b, on_b) = reach.items()
        context = str(uuid.uuid4())
        task = await workers.send(on_a, "pid", contextId=context)
        assert status_text(task) == f"pid {a}"
        seen = await workers.get(on_b, task["id"])
        assert seen["status"]["state"] == "TASK_STATE_COMPLETED"
        listed = await workers.call(on_b, "ListTasks", {"contextId": context})
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
        assert await workers.pid(on_b) == b  # the calls did reach the other process


async def test_cancel_on_one_process_stops_the_agent_on_the_other_within_a_second(
    workers: Workers,
) -> None:
    async with workers.reach_each() as reach, one_connection() as streaming:
        async with workers.stream(streaming, "SendStreamingMessage", send_params("hang")) as seen:
            first = await anext(seen)
            task_id = result_of(first)["id"]
            running = int(workers.printed(rf"started {task_id} pid=(\d+)").group(1))
            (other,) = set(reach) - {running}
            asked = time.monotonic()
            canceled = await workers.call(reach[other], "CancelTask", {"id": task_id})
            assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
            stopped = workers.printed(rf"cancelled {task_id} (\S+) pid={running}")
            assert float(stopped.group(1)) - asked < 1.0
            async with asyncio.timeout(1.0):
                rest = [frame async for frame in seen]
        assert state_of(rest[-1]) == "TASK_STATE_CANCELED"
        assert time.monotonic() - asked < 1.5
        assert await workers.pid(reach[other]) == other


async def test_subscribe_on_the_other_process_gets_the_events_live_and_replays_after_last_id(
    workers: Workers,
) -> None:
    async with workers.reach_each() as reach:
        (_, on_a), (b, on_b) = reach.items()
        task = await workers.send(on_a, "steps 6 0.2", immediately=True)
        frames = []
        async with workers.stream(on_b, "SubscribeToTask", {"id": task["id"]}) as live:
            async for frame in live:
                frames.append(frame)
                if len(frames) == 3:
                    break  # hang up midway, as a dropped connection would
        await asyncio.sleep(0.5)  # events are stored meanwhile, on the other process
        assert frames[-1].id is not None
        async with (
            workers.reach(b) as again,  # that connection closed with the stream
            workers.stream(
                again, "SubscribeToTask", {"id": task["id"]}, last_event_id=frames[-1].id
            ) as replayed,
        ):
            frames.extend([frame async for frame in replayed])
        ids = [frame.id for frame in frames]
        assert ids == list(range(frames[0].id or 0, (frames[0].id or 0) + len(ids)))
        assert state_of(frames[-1]) == "TASK_STATE_COMPLETED"
        final = await workers.get(on_a, task["id"])
        steps = [a["parts"][0]["text"] for a in final["artifacts"]]
        assert steps == [f"step {i}" for i in range(6)]
        streamed = [
            result_of(f)["artifact"]["parts"][0]["text"]
            for f in frames
            if "artifactUpdate" in f.result
        ]
        assert streamed == steps[len(steps) - len(streamed) :] and len(streamed) >= 3


async def test_a_follow_up_on_the_other_process_runs_there(workers: Workers) -> None:
    async with workers.reach_each() as reach:
        (_, on_a), (b, on_b) = reach.items()
        task = await workers.send(on_a, "input")
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        answered = await workers.send(on_b, "yes", taskId=task["id"])
        assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
        assert status_text(answered) == f"pid {b} got yes"
        assert (await workers.get(on_a, task["id"]))["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_same_message_sent_to_both_processes_at_once_makes_one_task(
    workers: Workers,
) -> None:
    async with workers.reach_each() as reach:
        on_a, on_b = reach.values()
        for _ in range(10):
            params = send_params("hang", contextId=str(uuid.uuid4()))
            params["configuration"] = {"returnImmediately": True}
            answers = await asyncio.gather(
                workers.raw(on_a, "SendMessage", params), workers.raw(on_b, "SendMessage", params)
            )
            context = params["message"]["contextId"]
            listed = await workers.call(on_a, "ListTasks", {"contextId": context})
            assert listed["totalSize"] == 1, answers
            (task,) = listed["tasks"]
            for answer in answers:  # the one that lost the race is answered as a resend
                assert answer["result"]["task"]["id"] == task["id"], answers
            await workers.call(on_b, "CancelTask", {"id": task["id"]})


async def test_metrics_on_either_process_count_the_sends_of_both(workers: Workers) -> None:
    """A scrape reaching either process reports the group: the sends each took."""
    from prometheus_client.parser import text_string_to_metric_families

    def sends(text: str) -> float:
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "a2ad_requests_total" and s.labels["method"] == "SendMessage"
        )

    async with workers.reach_each() as each:
        pids = list(each)
        await asyncio.sleep(1.5)  # both have written the sends that found them
        before = sends((await each[pids[0]].get(workers.served.url + "/metrics")).text)
        for _ in range(3):
            await workers.send(each[pids[0]], "ok")
        await workers.send(each[pids[1]], "ok")
        async with asyncio.timeout(WAIT):
            while True:  # the other process writes its counts about once a second
                seen = [
                    sends((await http.get(workers.served.url + "/metrics")).text)
                    for http in each.values()
                ]
                if seen == [before + 4, before + 4]:
                    break
                await asyncio.sleep(0.2)


async def test_a_second_server_on_the_same_sqlite_file_is_refused(workers: Workers) -> None:
    if workers.backend != "sqlite":
        pytest.skip("a SQLite file is served by one server; a database by many")
    done = await asyncio.to_thread(run_a2ad, "serve", "--port", "0", "--store", workers.store)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "already served by another a2ad process" in done.stdout + done.stderr


async def test_a_killed_process_is_started_again_and_its_tasks_fail_within_the_lease(
    workers: Workers,
) -> None:
    async with workers.reach_each() as reach:
        (a, on_a), (b, on_b) = reach.items()
        task = await workers.send(on_a, "hang", immediately=True)
        workers.printed(rf"started {task['id']} pid={a}")
        live = await workers.send(on_b, "hang", immediately=True)
        workers.printed(rf"started {live['id']} pid={b}")
        os.kill(a, signal.SIGKILL)
        killed = time.monotonic()
        async with asyncio.timeout(LEASE + 3):
            while (await workers.get(on_b, task["id"]))["status"]["state"] != "TASK_STATE_FAILED":
                await asyncio.sleep(0.05)
        assert time.monotonic() - killed < LEASE + 2
        workers.printed(rf"process \d \(pid {a}\) was killed by SIGKILL; starting another")
        new = set()
        async with asyncio.timeout(START_WAIT):
            while not new:
                async with one_connection() as http:
                    new = {await workers.pid(http)} - {a, b}
                await asyncio.sleep(0.1)
        # The new process claimed nothing: the task its sibling runs is still running.
        assert (await workers.get(on_b, live["id"]))["status"]["state"] == "TASK_STATE_WORKING"


async def test_ctrl_c_stops_every_process(workers: Workers) -> None:
    async with workers.reach_each() as reach:
        pids = set(reach)
    sockets = signal_folders(pids) if workers.backend == "sqlite" else set()
    assert len(sockets) == (1 if workers.backend == "sqlite" else 0)
    asked = time.monotonic()
    assert await asyncio.to_thread(workers.served.stop, WAIT) == 0
    assert time.monotonic() - asked < WAIT
    workers.served.reader.join(WAIT)
    assert "a2ad stopped." in workers.served.output
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    for folder in sockets:  # the group's signal sockets are gone with it
        assert not os.path.exists(folder)


async def test_workers_need_a_store_the_processes_share() -> None:
    done = await asyncio.to_thread(
        run_a2ad, "serve", "--port", "0", "--workers", "2", "--store", "memory"
    )
    assert done.returncode == 2
    assert "--workers: processes can't share a memory store" in done.stdout + done.stderr


async def test_processes_that_cant_start_stop_the_group_with_their_status(
    tmp_path: Path,
) -> None:
    unreachable = "postgresql://postgres@127.0.0.1:1/none"
    key = ("--secret-key-file", str(tmp_path / "a2ad.key"))
    done = await asyncio.to_thread(
        run_a2ad, "serve", "--port", "0", "--workers", "2", "--store", unreachable, *key, timeout=60
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "before the server started; stopping" in done.stderr


def signal_folders(pids: set[int]) -> set[str]:
    """The folders of the Unix sockets these processes have bound."""
    inodes = set()
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if m := re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}")):
                    inodes.add(m.group(1))
    folders = set()
    with open("/proc/net/unix") as table:
        for line in table:
            fields = line.split()
            if len(fields) == 8 and fields[6] in inodes:
                folders.add(os.path.dirname(fields[7]))
    return folders


async def test_a_second_ctrl_c_cuts_every_process_s_grace_short(tmp_path: Path) -> None:
    with Served(
        "--workers",
        "2",
        "--store",
        f"sqlite:///{tmp_path}/tasks.db",
        *AGENT,
        "--shutdown-grace",
        "60",
        env={"PYTHONUNBUFFERED": "1"},
    ) as served:
        workers = Workers(served, "sqlite", "")
        async with workers.reach_each() as reach:
            tasks = {}
            for pid, http in reach.items():
                tasks[pid] = (await workers.send(http, "hang", immediately=True))["id"]
                workers.printed(rf"started {tasks[pid]} pid={pid}")
            served.proc.send_signal(signal.SIGINT)
            await asyncio.sleep(0.5)
            for pid, http in reach.items():  # each drains: new work refused, its task runs on
                refused = await workers.raw(http, "SendMessage", send_params("pid"))
                assert refused["error"]["code"] == -32000, refused
                running = await workers.get(http, tasks[pid])
                assert running["status"]["state"] == "TASK_STATE_WORKING"
        asked = time.monotonic()
        served.proc.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(served.proc.wait, WAIT) == 0
        assert time.monotonic() - asked < WAIT
        for pid in reach:
            workers.printed(rf"cancelled \S+ \S+ pid={pid}")
