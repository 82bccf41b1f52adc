"""Workers apart from the front, as users run them: a real ``a2ad serve
--no-run`` and real ``a2ad worker`` processes on a fresh PostgreSQL schema.

The front serves two agents, ``work`` (at / too) and ``doomed``; the module's
worker runs ``work`` two tasks at a time, and tests start more workers as
they need them (``doomed`` has one only while a test kills it). Each turn an
agent starts, or has canceled, is noted in a file (agents.py), which is how a
test sees where and how often an agent ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import V1, free_port
from ..jsonrpc import rpc_body
from ..postgres import fresh_schema
from ..process_output import ProcessOutput
from ..served import Served
from .agents import TURNS

A2AD = Path(sys.executable).parent / "a2ad"
PROJECT = Path(__file__).resolve().parent.parent.parent
SPEC = "tests.workers.agents:WorkAgent"
LEASE = 2.0  # seconds: short, so that a killed worker's tasks fail soon
WAIT = 10.0
NO_WORKER_WAIT = 2.0  # the front's --no-worker-wait: a blocking send without a worker answers soon


class WorkerProcess(ProcessOutput):
    """One ``a2ad worker`` process."""

    # As tests/served.py waits for a server: on a busy machine, importing a2ad
    # (compiled afresh when no bytecode is written) can take most of 10 s.
    expect_timeout = 30.0

    def __init__(self, store: str, *args: str, turns: Path) -> None:
        self.proc = subprocess.Popen(
            [str(A2AD), "worker", "--store", store, "--lease-seconds", str(LEASE), *args],
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "COLUMNS": "200", TURNS: str(turns)},
        )
        self.watch(self.proc)
        self.expect(r"a2ad worker running")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@contextmanager
def worker(store: str, *args: str, turns: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(store, *args, turns=turns)
    try:
        yield process
    finally:
        process.close()


class Front:
    """JSON-RPC 1.0 calls to a server, at / or at one agent's path."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=WAIT)
        self.ids = 0

    def __enter__(self) -> Front:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def call(self, method: str, params: Any, path: str = "/") -> Any:
        self.ids += 1
        body = rpc_body(method, params, self.ids)
        answer = self.http.post(self.url + path, json=body, headers=V1).json()
        assert "error" not in answer, answer
        return answer["result"]

    def send(
        self, text: str, *, path: str = "/", immediately: bool = False, task_id: str = ""
    ) -> dict[str, Any]:
        params = message(text, task_id=task_id)
        if immediately:
            params["configuration"] = {"returnImmediately": True}
        return self.call("SendMessage", params, path)["task"]  # type: ignore[no-any-return]

    def get(self, task_id: str, path: str = "/") -> dict[str, Any]:
        return self.call("GetTask", {"id": task_id}, path)  # type: ignore[no-any-return]

    def cancel(self, task_id: str, path: str = "/") -> dict[str, Any]:
        return self.call("CancelTask", {"id": task_id}, path)  # type: ignore[no-any-return]

    @contextmanager
    def stream(self, text: str, path: str = "/") -> Iterator[Iterator[tuple[int, dict[str, Any]]]]:
        """SendStreamingMessage: its (id, result) frames, as they come."""
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "SendStreamingMessage",
            "params": message(text),
        }
        with self.http.stream("POST", self.url + path, json=body, headers=V1) as response:
            assert response.status_code == 200
            yield frames(response)

    def wait_state(self, task_id: str, state: str, path: str = "/") -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while True:
            task = self.get(task_id, path)
            if task["status"]["state"] == state:
                return task
            assert time.monotonic() < deadline, f"task {task_id} never became {state}: {task}"
            time.sleep(0.05)


def message(text: str, *, task_id: str = "") -> dict[str, Any]:
    msg: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        msg["taskId"] = task_id
    return {"message": msg}


def frames(response: httpx.Response) -> Iterator[tuple[int, dict[str, Any]]]:
    event_id = -1
    for line in response.iter_lines():
        if line.startswith("id:"):
            event_id = int(line[3:])
        elif line.startswith("data:"):
            yield event_id, json.loads(line[5:])["result"]


class Turns:
    """The turns the agents noted: (what, task id, pid) lines."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[tuple[str, str, int]]:
        if not self.path.exists():
            return []
        return [
            (what, task_id, int(pid))
            for what, task_id, pid in (line.split() for line in self.path.read_text().splitlines())
        ]

    def of(self, task_id: str, what: str = "start") -> list[int]:
        """The pids that noted ``what`` of the task."""
        return [pid for w, t, pid in self.lines() if w == what and t == task_id]

    def wait(self, task_id: str, what: str = "start") -> list[int]:
        deadline = time.monotonic() + WAIT
        while not (pids := self.of(task_id, what)):
            assert time.monotonic() < deadline, f"no {what} of {task_id}: {self.lines()}"
            time.sleep(0.02)
        return pids


class Setup:
    def __init__(self, served: Served, store: str, front: Front, turns: Turns, key: Path) -> None:
        self.served = served
        self.store = store
        self.front = front
        self.turns = turns
        self.key = key


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    loop = asyncio.new_event_loop()
    schema = fresh_schema()
    store = loop.run_until_complete(schema.__aenter__())
    tmp = tmp_path_factory.mktemp("workers")
    turns = tmp / "turns.txt"
    try:
        with (
            Served(
                "--no-run",
                "--store",
                store,
                "--agent",
                f"work={SPEC}",
                "--agent",
                f"doomed={SPEC}",
                "--secret-key-file",
                str(tmp / "key"),
                "--lease-seconds",
                str(LEASE),
                "--shutdown-grace",
                "0",
                "--no-worker-wait",
                f"{NO_WORKER_WAIT}s",
                env={TURNS: str(turns)},
            ) as served,
            worker(store, "--agent", f"work={SPEC}", "--concurrency", "2", turns=turns),
        ):
            with Front(served.url) as front:
                yield Setup(served, store, front, Turns(turns), tmp / "key")
    finally:
        loop.run_until_complete(schema.__aexit__(None, None, None))
        loop.close()


def test_the_front_says_it_runs_no_agents_and_serves_their_cards(setup: Setup) -> None:
    setup.served.expect(r"Agents:\s+run by `a2ad worker` processes")
    card = setup.front.http.get(setup.front.url + "/.well-known/agent-card.json").json()
    assert card["name"] == "work"


def test_a_blocking_send_for_an_agent_no_worker_runs_ends_saying_so(setup: Setup) -> None:
    # `doomed` has no worker (until a test below starts one): its tasks wait.
    served, front = setup.served, setup.front
    served.expect(r"warning: no worker is connected for [^\n]*agent doomed[^\n]*a2ad worker")
    # The module's worker is on the roll once it has written its row, which the
    # front reads every 2 s: under load, after the warning above.
    deadline = time.monotonic() + 30
    while True:
        ready = front.http.get(front.url + "/readyz")
        assert ready.status_code == 200  # the front still takes and serves tasks
        if ready.json()["workers"]["work"] == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ready.json()["workers"] == {"work": 1, "doomed": 0}
    assert "no worker is connected for agent doomed" in ready.json()["warning"]
    started = time.monotonic()
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("echo hi")}
    answer = httpx.post(front.url + "/agents/doomed/", json=body, headers=V1, timeout=60).json()
    took = time.monotonic() - started
    error = answer["error"]
    assert error["code"] == -32000
    info = error["data"][0]
    assert info["reason"] == "NO_WORKER"
    task_id = info["metadata"]["taskId"]
    assert info["metadata"]["agent"] == "doomed"
    said = f"Task {task_id} is queued, and no worker that runs agent doomed has been connected"
    assert said in error["message"]
    assert "`a2ad worker`" in error["message"]
    assert NO_WORKER_WAIT <= took < NO_WORKER_WAIT + 5.0  # and a look or two at the roll
    # Its audit line names the task, which the request did not (a new one).
    served.expect(r'"logger":"a2ad.audit".*"reason":"NO_WORKER"')
    (audited,) = [
        json.loads(line)
        for line in served.output.splitlines()
        if '"logger":"a2ad.audit"' in line and '"NO_WORKER"' in line
    ]
    assert audited["task_id"] == task_id and audited["code"] == -32000
    # The task still waits, and the front said why once in its log.
    assert front.get(task_id, "/agents/doomed/")["status"]["state"] == "TASK_STATE_SUBMITTED"
    warned = r"tasks of agent doomed wait, and no worker runs it: start `a2ad worker`"
    served.expect(warned)
    front.send("echo again", path="/agents/doomed/", immediately=True)
    time.sleep(2.5)  # a look at the roll or more
    assert len(re.findall(warned, served.output)) == 1
    # A worker for it runs what waits, and the front says so.
    with worker(setup.store, "--agent", f"doomed={SPEC}", turns=setup.turns.path):
        done = front.wait_state(task_id, "TASK_STATE_COMPLETED", path="/agents/doomed/")
        served.expect(r"agent doomed has a worker again")
        assert "warning" not in front.http.get(front.url + "/readyz").json()
    assert done["artifacts"][0]["parts"][0]["text"] == "hi"


def test_a_blocking_send_to_the_front_answers_the_task_a_worker_completed(setup: Setup) -> None:
    task = setup.front.send("echo hello")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "hello"
    (pid,) = setup.turns.of(task["id"])
    assert pid != os.getpid()


def test_return_immediately_answers_at_once_and_get_sees_the_worker_finish(setup: Setup) -> None:
    task = setup.front.send("nap 0.3", immediately=True)
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    done = setup.front.wait_state(task["id"], "TASK_STATE_COMPLETED")
    assert done["status"]["message"]["parts"][0]["text"] == "rested"


def test_a_follow_up_to_an_input_required_task_runs_in_a_worker(setup: Setup) -> None:
    asked = setup.front.send("input which one?")
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answered = setup.front.send("blue", task_id=asked["id"])
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answered["artifacts"][-1]["parts"][0]["text"] == "got: blue"
    assert len(setup.turns.of(asked["id"])) == 2


def test_a_stream_from_the_front_has_the_events_an_instance_running_the_agent_sends(
    setup: Setup,
) -> None:
    with setup.front.stream("chunks 3") as stream:
        via_worker = list(stream)
    with Served(
        "--store", setup.store, "--agent", SPEC, "--secret-key-file", str(setup.key)
    ) as instance:
        with Front(instance.url) as front, front.stream("chunks 3") as stream:
            here = list(stream)
    assert shape(via_worker) == shape(here)
    assert [i for i, _ in via_worker] == list(range(len(via_worker)))


def shape(frames: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str, Any]]:
    """The frames without what differs from task to task (ids, times)."""
    out = []
    for event_id, result in frames:
        (kind, body) = result.items().__iter__().__next__()
        if kind == "task":
            out.append((event_id, kind, body["status"]["state"]))
        elif kind == "statusUpdate":
            out.append((event_id, kind, body["status"]["state"]))
        else:
            artifact = body["artifact"]
            out.append(
                (event_id, kind, (artifact["parts"], body.get("append"), body.get("lastChunk")))
            )
    return out


def test_cancel_on_the_front_stops_the_agent_in_its_worker_and_ends_the_stream(
    setup: Setup,
) -> None:
    with setup.front.stream("hang") as stream:
        _, head = next(stream)
        task_id = head["task"]["id"]
        setup.turns.wait(task_id)
        started = time.monotonic()
        assert setup.front.cancel(task_id)["status"]["state"] == "TASK_STATE_CANCELED"
        rest = [result for _, result in stream]
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    setup.turns.wait(task_id, "cancel")
    assert time.monotonic() - started < 1.0


def test_a_worker_runs_at_most_its_concurrency_and_a_waiting_task_cancels_unrun(
    setup: Setup,
) -> None:
    front = setup.front
    running = [front.send("hang", immediately=True)["id"] for _ in range(2)]
    for task_id in running:
        setup.turns.wait(task_id)
    waiting = front.send("hang", immediately=True)["id"]
    time.sleep(0.5)  # time enough for a worker to take it, were it allowed
    assert front.get(waiting)["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert setup.turns.of(waiting) == []
    assert front.cancel(waiting)["status"]["state"] == "TASK_STATE_CANCELED"
    front.cancel(running[0])  # a slot frees: the canceled task is not run in it
    queued_next = front.send("echo next", immediately=True)["id"]
    front.wait_state(queued_next, "TASK_STATE_COMPLETED")
    assert setup.turns.of(waiting) == []
    front.cancel(running[1])


def test_two_workers_never_run_the_same_task(setup: Setup) -> None:
    front = setup.front
    path = setup.turns.path
    with worker(setup.store, "--agent", f"work={SPEC}", "--concurrency", "2", turns=path) as other:
        ids = [front.send("nap 0.2", immediately=True)["id"] for _ in range(16)]
        for task_id in ids:
            front.wait_state(task_id, "TASK_STATE_COMPLETED")
    runs = {task_id: setup.turns.of(task_id) for task_id in ids}
    assert all(len(pids) == 1 for pids in runs.values()), runs
    ran_in = {pids[0] for pids in runs.values()}
    assert len(ran_in) == 2 and other.proc.pid in ran_in


def test_a_worker_stopped_by_sigterm_finishes_its_turn_and_takes_no_more(setup: Setup) -> None:
    front, path = setup.front, "/agents/doomed/"
    with worker(
        setup.store, "--agent", f"doomed={SPEC}", "--concurrency", "1", turns=setup.turns.path
    ) as stopping:
        napping = front.send("nap 1", path=path, immediately=True)["id"]
        setup.turns.wait(napping)
        stopping.proc.send_signal(signal.SIGTERM)
        later = front.send("echo later", path=path, immediately=True)["id"]
        assert stopping.proc.wait(WAIT) == 0
        stopping.expect("a2ad worker stopped")
    assert front.get(napping, path)["status"]["state"] == "TASK_STATE_COMPLETED"
    assert front.get(later, path)["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert setup.turns.of(later) == []
    front.cancel(later, path)


def test_a_workers_log_lines_name_the_task_context_and_agent_of_their_turn(setup: Setup) -> None:
    path = "/agents/doomed/"
    args = ("--agent", f"doomed={SPEC}", "--log-format", "text")
    with worker(setup.store, *args, turns=setup.turns.path) as logging:
        task = setup.front.send("echo logged", path=path)
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        ids = f" task_id={task['id']} context_id={task['contextId']} agent=doomed"
        line = logging.expect(re.escape(ids)).string
    assert re.match(r"\d\d:\d\d:\d\d\.\d{3} INFO ", line), line
    assert "{" not in line


def test_a_killed_workers_tasks_fail_within_the_lease(setup: Setup) -> None:
    front = setup.front
    with worker(setup.store, "--agent", f"doomed={SPEC}", turns=setup.turns.path) as doomed:
        with front.stream("hang", path="/agents/doomed/") as stream:
            _, head = next(stream)
            task_id = head["task"]["id"]
            other = front.send("hang", path="/agents/doomed/", immediately=True)["id"]
            setup.turns.wait(task_id)
            setup.turns.wait(other)
            doomed.proc.kill()
            killed = time.monotonic()
            last = [result for _, result in stream][-1]
    took = time.monotonic() - killed
    status = last["statusUpdate"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert "stopped" in status["message"]["parts"][0]["text"]
    assert took < LEASE + 2.0
    assert front.wait_state(other, "TASK_STATE_FAILED", path="/agents/doomed/")


@pytest.mark.parametrize(
    "command", [("serve", "--no-run"), ("worker",)], ids=["serve --no-run", "worker"]
)
def test_workers_need_a_postgresql_store_and_say_so(command: tuple[str, ...]) -> None:
    done = subprocess.run(
        [str(A2AD), *command, "--store", "sqlite:///never.db"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 2, done.stderr
    assert "needs a PostgreSQL store" in done.stderr
    assert "SQLite file or memory can't be shared" in done.stderr
    assert not (PROJECT / "never.db").exists()


def test_a_worker_whose_database_is_down_exits_3_naming_it() -> None:
    port = free_port()  # nothing listens there
    done = subprocess.run(
        [str(A2AD), "worker", "--store", f"postgresql://postgres@127.0.0.1:{port}/a2ad"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 3, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
