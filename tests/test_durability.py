"""Durability, end to end: real ``a2ad serve`` processes on one SQLite file,
stopped with Ctrl-C (SIGINT) or killed (SIGKILL) and started again."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import Agent, TaskContext
from a2ad.agents.echo import EchoAgent
from a2ad.server.extensions import PUSH_DELIVERY

from .conftest import V1, free_port
from .jsonrpc import answer, rpc_body
from .scripted import ScriptedAgent
from .served import Served, run_a2ad
from .webhook_receiver import Receiver

STOPPED = "stopped or was lost"  # what an orphaned task's status message says
SHUT_DOWN = "shut down"  # what a task cut off by Ctrl-C says


class DurableAgent(Agent):
    """The scripted agent (first word: input/fail/hang/parts/chunks/echo…), plus
    the echo agent's ``sleep:<seconds> <text>``; for ``--agent`` in these tests."""

    name = "durable"
    description = "ScriptedAgent, and echo's sleep:<seconds> <text>."

    def __init__(self) -> None:
        self.scripted = ScriptedAgent()
        self.echo = EchoAgent()

    async def run(self, ctx: TaskContext) -> None:
        if ctx.text.startswith("sleep:") and len(ctx.history) <= 1:
            await self.echo.run(ctx)
        else:
            await self.scripted.run(ctx)


AGENT = ("--agent", "tests.test_durability:DurableAgent")


class Server:
    """One ``a2ad serve`` process, and JSON-RPC calls to it."""

    def __init__(self, served: Served, http: httpx.Client) -> None:
        self.served = served
        self.http = http
        self.url = served.expect(r"JSON-RPC:\s+(http://\S+)").group(1)
        self.ids = 0

    def body(self, method: str, params: Any) -> dict[str, Any]:
        self.ids += 1
        return rpc_body(method, params, self.ids)

    def raw(self, method: str, params: Any, *, v1: bool) -> dict[str, Any]:
        return answer(
            self.http.post(self.url, json=self.body(method, params), headers=V1 if v1 else {})
        )

    def call(self, method: str, params: Any, *, v1: bool) -> Any:
        answer = self.raw(method, params, v1=v1)
        assert "error" not in answer, answer
        return answer["result"]

    def send1(self, text: str, *, immediately: bool = False, **message: Any) -> dict[str, Any]:
        """1.0 SendMessage; the task."""
        params: dict[str, Any] = {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
                **message,
            }
        }
        if immediately:
            params["configuration"] = {"returnImmediately": True}
        return self.call("SendMessage", params, v1=True)["task"]  # type: ignore[no-any-return]

    def send03(self, text: str, *, immediately: bool = False, **message: Any) -> dict[str, Any]:
        """0.3 message/send; the task."""
        params: dict[str, Any] = {
            "message": {"role": "user", "parts": [{"kind": "text", "text": text}], **message}
        }
        if immediately:
            params["configuration"] = {"blocking": False}
        task = self.call("message/send", params, v1=False)
        assert task["kind"] == "task", task
        return task  # type: ignore[no-any-return]

    def get1(self, task_id: str) -> dict[str, Any]:
        return self.call("GetTask", {"id": task_id}, v1=True)  # type: ignore[no-any-return]

    def get03(self, task_id: str) -> dict[str, Any]:
        return self.call("tasks/get", {"id": task_id}, v1=False)  # type: ignore[no-any-return]

    def wait_state(self, task_id: str, state: str, timeout: float = 5.0) -> dict[str, Any]:
        """Poll 1.0 GetTask until the task is in ``state``; the task."""
        deadline = time.monotonic() + timeout
        while True:
            task = self.get1(task_id)
            if task["status"]["state"] == state:
                return task
            if time.monotonic() > deadline:
                raise AssertionError(f"task {task_id} never became {state}: {task}")
            time.sleep(0.05)

    def sigint(self, timeout: float = 10.0) -> tuple[int, float]:
        """Ctrl-C; (exit code, seconds it took to exit)."""
        asked = time.monotonic()
        code = self.served.stop(timeout)
        return code, time.monotonic() - asked

    def sigkill(self) -> None:
        self.served.proc.kill()
        self.served.proc.wait(10)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "tasks.db"


@pytest.fixture
def serve(db: Path, http: httpx.Client) -> Iterator[Callable[..., Server]]:
    """Start ``a2ad serve`` on the test's SQLite file; every process is killed at the end."""
    started: list[Served] = []

    def start(*args: str) -> Server:
        served = Served("--store", f"sqlite:///{db}", *args)
        started.append(served)
        return Server(served, http)

    try:
        yield start
    finally:
        for served in started:
            served.__exit__(None, None, None)


def status_text(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in task["status"]["message"]["parts"])


def read_sse(
    http: httpx.Client,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    limit: int | None = None,
    timeout: float = 5,
) -> list[tuple[int | None, dict[str, Any]]]:
    """(id, data) of each SSE event, until the stream ends or ``limit`` events came."""
    events: list[tuple[int | None, dict[str, Any]]] = []
    with http.stream("POST", url, json=body, headers=headers, timeout=timeout) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        event_id: int | None = None
        data: list[str] = []
        for line in r.iter_lines():
            if line.startswith("id:"):
                event_id = int(line[3:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                events.append((event_id, json.loads("\n".join(data))))
                event_id, data = None, []
                if limit is not None and len(events) >= limit:
                    break
    return events


# --- 1. a restart keeps everything ---


def test_restart_answers_every_read_exactly_as_before_and_an_interrupted_task_continues(
    serve: Callable[..., Server],
) -> None:
    s = serve(*AGENT, "--shutdown-grace", "0")
    tasks = {
        "one": s.send1("echo one", contextId="ctx-a"),
        "two": s.send03("echo two", contextId="ctx-a"),
        "parts": s.send1("parts", contextId="ctx-b"),
        "chunks": s.send03("chunks 3"),
        "fail": s.send1("fail", contextId="ctx-b"),
        "input": s.send1("input which?", contextId="ctx-b"),
    }
    hang = s.send1("hang", immediately=True, contextId="ctx-c")
    s.wait_state(hang["id"], "TASK_STATE_WORKING")
    tasks["canceled"] = s.call("CancelTask", {"id": hang["id"]}, v1=True)
    ids = {name: t["id"] for name, t in tasks.items()}
    assert s.get1(ids["one"])["artifacts"][0]["parts"][0]["text"] == "one"
    chunked = s.get03(ids["chunks"])["artifacts"]
    assert [p["text"] for p in chunked[0]["parts"]] == ["c0", "c1", "c2"]
    assert len(s.get1(ids["parts"])["artifacts"]) == 5
    assert s.get1(ids["fail"])["status"]["state"] == "TASK_STATE_FAILED"
    assert s.get1(ids["input"])["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert s.get1(ids["canceled"])["status"]["state"] == "TASK_STATE_CANCELED"

    requests: list[tuple[str, dict[str, Any], bool]] = []
    for task_id in ids.values():
        requests += [
            ("GetTask", {"id": task_id}, True),
            ("GetTask", {"id": task_id, "historyLength": 1}, True),
            ("tasks/get", {"id": task_id}, False),
            ("tasks/get", {"id": task_id, "historyLength": 1}, False),
        ]
    requests += [
        ("ListTasks", {}, True),
        ("ListTasks", {"contextId": "ctx-b", "historyLength": 1}, True),
        ("ListTasks", {"status": "TASK_STATE_COMPLETED", "includeArtifacts": True}, True),
        ("ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"}, True),
        ("tasks/list", {"contextId": "ctx-a", "includeArtifacts": True}, False),
    ]
    before: list[Any] = [s.call(method, params, v1=v1) for method, params, v1 in requests]
    assert before[-5]["totalSize"] == len(ids)
    assert {t["id"] for t in before[-5]["tasks"]} == set(ids.values())
    assert [t["id"] for t in before[-2]["tasks"]] == [ids["input"]]

    # Walk the pages too, in both dialects; the tokens are requests of their own.
    for method, params, v1 in (
        ("ListTasks", {"pageSize": 3}, True),
        ("tasks/list", {"pageSize": 2, "status": "completed"}, False),
    ):
        seen: list[str] = []
        page = dict(params)
        while True:
            requests.append((method, page, v1))
            result = s.call(method, page, v1=v1)
            before.append(result)
            seen += [t["id"] for t in result["tasks"]]
            if not result["nextPageToken"]:
                break
            page = {**params, "pageToken": result["nextPageToken"]}
        assert len(seen) == len(set(seen)) == result["totalSize"]
    assert len(seen) == 4  # completed: one, two, parts, chunks

    code, _ = s.sigint()
    assert code == 0

    s = serve(*AGENT, "--shutdown-grace", "0")
    after = [s.call(method, params, v1=v1) for method, params, v1 in requests]
    for request, old, new in zip(requests, before, after, strict=True):
        assert new == old, request

    answered = s.send1("blue", taskId=ids["input"])
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    assert answered["contextId"] == "ctx-b"
    assert answered["artifacts"][-1]["parts"][0]["text"] == "got: blue"
    # The history goes on from where it was: the old messages, then the follow-up.
    old = before[requests.index(("GetTask", {"id": ids["input"]}, True))]["history"]
    history = s.get1(ids["input"])["history"]
    assert history[: len(old)] == old
    assert history[len(old)]["parts"][0]["text"] == "blue"


# --- 2. SIGKILL: the dead server's running tasks fail; nothing is lost ---


def test_after_sigkill_running_tasks_fail_as_orphans_and_interrupted_ones_continue(
    serve: Callable[..., Server],
) -> None:
    # The default 15 s lease: the restart must not wait for it.
    s = serve(*AGENT, "--shutdown-grace", "0")
    running = [s.send1(f"sleep:30 x{i}", immediately=True)["id"] for i in range(2)]
    running += [s.send03(f"sleep:30 y{i}", immediately=True)["id"] for i in range(2)]
    waiting = s.send1("input which?")
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = s.send03("echo kept")["id"]
    for task_id in running:
        s.wait_state(task_id, "TASK_STATE_WORKING")

    s.sigkill()
    s = serve(*AGENT, "--shutdown-grace", "0")
    # Failed before the restarted server answers anything: it holds the file's
    # lock, so the killed server is provably gone.
    for task_id in running:
        failed = s.get1(task_id)
        assert failed["status"]["state"] == "TASK_STATE_FAILED", failed
        assert STOPPED in status_text(failed).lower(), failed
        assert failed["status"]["message"]["role"] == "ROLE_AGENT"
        assert failed["history"][0]["parts"][0]["text"].startswith("sleep:30 ")
        old = s.get03(task_id)
        assert old["status"]["state"] == "failed"
        assert STOPPED in status_text(old).lower()

    assert s.get1(done)["status"]["state"] == "TASK_STATE_COMPLETED"
    assert s.get1(done)["artifacts"][0]["parts"][0]["text"] == "kept"
    for state, v1 in (("TASK_STATE_WORKING", True), ("submitted", False), ("working", False)):
        listed = s.call("ListTasks" if v1 else "tasks/list", {"status": state}, v1=v1)
        assert (listed["tasks"], listed["totalSize"]) == ([], 0), state
    listed = s.call("ListTasks", {"status": "TASK_STATE_FAILED"}, v1=True)
    assert sorted(t["id"] for t in listed["tasks"]) == sorted(running)
    assert s.call("ListTasks", {}, v1=True)["totalSize"] == len(running) + 2

    assert s.get1(waiting["id"])["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answered = s.send1("green", taskId=waiting["id"])
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    assert answered["artifacts"][-1]["parts"][0]["text"] == "got: green"


def test_a_second_server_on_a_served_file_refuses_naming_the_first_and_leaves_it_alone(
    serve: Callable[..., Server], db: Path
) -> None:
    a = serve(*AGENT, "--shutdown-grace", "0")
    task_id = a.send1("sleep:30 shared", immediately=True)["id"]
    a.wait_state(task_id, "TASK_STATE_WORKING")

    refused = run_a2ad("serve", "--port", str(free_port()), "--store", f"sqlite:///{db}")
    said = refused.stdout + refused.stderr
    assert refused.returncode == 3, said
    assert str(db) in said and f"pid {a.served.proc.pid}" in said, said
    assert "--store" in said, said  # what to do instead
    assert "Traceback" not in said, said
    assert a.get1(task_id)["status"]["state"] == "TASK_STATE_WORKING"
    cancel = a.call("CancelTask", {"id": task_id}, v1=True)
    assert cancel["status"]["state"] == "TASK_STATE_CANCELED"

    # Once the first has died, the file is free again, and what it ran is settled.
    other = a.send1("sleep:30 left", immediately=True)["id"]
    a.wait_state(other, "TASK_STATE_WORKING")
    a.sigkill()
    b = serve(*AGENT, "--shutdown-grace", "0")
    failed = b.get1(other)
    assert failed["status"]["state"] == "TASK_STATE_FAILED", failed
    assert STOPPED in status_text(failed).lower(), failed
    assert b.get1(task_id)["status"]["state"] == "TASK_STATE_CANCELED"


# --- 3. Ctrl-C gives running tasks the grace period, then fails the rest ---


def test_ctrl_c_lets_tasks_finish_within_the_grace_then_fails_the_rest(
    serve: Callable[..., Server],
) -> None:
    s = serve("--shutdown-grace", "5")
    quick = s.send1("sleep:1 a", immediately=True)["id"]
    slow = s.send03("sleep:30 b", immediately=True)["id"]
    s.wait_state(quick, "TASK_STATE_WORKING")
    s.wait_state(slow, "TASK_STATE_WORKING")
    code, took = s.sigint(timeout=15)
    assert code == 0
    assert 4.5 <= took < 7.5, took

    s = serve("--shutdown-grace", "0")
    a = s.get1(quick)
    assert a["status"]["state"] == "TASK_STATE_COMPLETED", a
    assert a["artifacts"][0]["parts"][0]["text"] == "a"
    b = s.get03(slow)
    assert b["status"]["state"] == "failed", b
    assert SHUT_DOWN in status_text(b).lower(), b

    # With no grace, Ctrl-C stops at once, and the running task is failed all the same.
    cut = s.send1("sleep:30 c", immediately=True)["id"]
    s.wait_state(cut, "TASK_STATE_WORKING")
    code, took = s.sigint()
    assert code == 0
    assert took < 3, took

    s = serve("--shutdown-grace", "0")
    c = s.get1(cut)
    assert c["status"]["state"] == "TASK_STATE_FAILED", c
    assert SHUT_DOWN in status_text(c).lower(), c


def test_a_second_ctrl_c_cuts_the_grace_short(serve: Callable[..., Server]) -> None:
    s = serve("--shutdown-grace", "60")
    task_id = s.send1("sleep:60 long", immediately=True)["id"]
    s.wait_state(task_id, "TASK_STATE_WORKING")
    s.served.proc.send_signal(signal.SIGINT)
    s.served.expect("shutting down: waiting up to 60 s")
    asked = time.monotonic()
    s.served.proc.send_signal(signal.SIGINT)
    assert s.served.proc.wait(15) == 0
    assert time.monotonic() - asked < 10

    s = serve("--shutdown-grace", "0")
    failed = s.get1(task_id)
    assert failed["status"]["state"] == "TASK_STATE_FAILED", failed
    assert SHUT_DOWN in status_text(failed).lower(), failed


def test_sigterm_with_streams_and_blocking_sends_open_ends_each_with_its_final_event(
    serve: Callable[..., Server], http: httpx.Client
) -> None:
    """SIGTERM under load: during the grace new work gets -32000 (not a refused
    connection), a blocking send that finishes within it gets its task, every
    open stream ends with its task's final event, and the log has one line per
    failed task and no traceback."""
    s = serve("--shutdown-grace", "5")
    v1 = {"A2A-Version": "1.0"}
    done: dict[str, Any] = {}

    def stream(name: str, text: str) -> None:
        body = s.body("SendStreamingMessage", {"message": message1(text)})
        done[name] = read_sse(http, s.url, body, v1, timeout=20)

    def subscribe(name: str, task_id: str) -> None:
        body = s.body("SubscribeToTask", {"id": task_id})
        done[name] = read_sse(http, s.url, body, v1, timeout=20)

    def block(name: str, text: str) -> None:
        done[name] = s.raw("SendMessage", {"message": message1(text)}, v1=True)

    followed = s.send1("sleep:30 followed", immediately=True)["id"]
    s.wait_state(followed, "TASK_STATE_WORKING")
    jobs = [
        threading.Thread(target=stream, args=("quick stream", "sleep:1 a")),
        threading.Thread(target=stream, args=("slow stream", "sleep:30 b")),
        threading.Thread(target=subscribe, args=("subscriber", followed)),
        # Past uvicorn's own 3 s: it must still be answered with its task.
        threading.Thread(target=block, args=("blocking send", "sleep:4 c")),
    ]
    for job in jobs:
        job.start()
    deadline = time.monotonic() + 5
    while s.call("ListTasks", {"status": "TASK_STATE_WORKING"}, v1=True)["totalSize"] < 4:
        assert time.monotonic() < deadline, "the tasks never all ran"
        time.sleep(0.05)

    s.served.proc.send_signal(signal.SIGTERM)
    s.served.expect("shutting down")
    during = s.raw("SendMessage", {"message": message1("too late")}, v1=True)
    assert during["error"]["code"] == -32000, during
    assert "shutting down" in during["error"]["message"], during
    assert s.get1(followed)["status"]["state"] == "TASK_STATE_WORKING"  # reads still work
    for job in jobs:
        job.join(20)
    assert s.served.proc.wait(15) == 0

    def last_state(events: list[tuple[int | None, dict[str, Any]]]) -> dict[str, Any]:
        result = events[-1][1]["result"]
        return (result.get("statusUpdate") or result.get("task"))["status"]  # type: ignore[no-any-return]

    assert last_state(done["quick stream"])["state"] == "TASK_STATE_COMPLETED"
    for name in ("slow stream", "subscriber"):
        status = last_state(done[name])
        assert status["state"] == "TASK_STATE_FAILED", (name, done[name])
        assert SHUT_DOWN in " ".join(p["text"] for p in status["message"]["parts"]).lower()
    answered = done["blocking send"]["result"]["task"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    assert answered["artifacts"][0]["parts"][0]["text"] == "c"

    log = s.served.output
    assert "Traceback" not in log and "Exception in ASGI" not in log, log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    failed_lines = [line for line in lines if line["msg"] == "task failed"]
    assert len(failed_lines) == 2, log  # the slow stream's task and the followed one


def message1(text: str) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}


# --- 4. Last-Event-ID replays what was missed, across a restart ---


def test_last_event_id_replays_the_events_missed_across_a_restart(
    serve: Callable[..., Server], http: httpx.Client
) -> None:
    s = serve(*AGENT, "--shutdown-grace", "0")
    task_id = s.send1("input which?")["id"]
    first = read_sse(http, s.url, s.body("SubscribeToTask", {"id": task_id}), V1, limit=1)
    [(last, data)] = first
    assert isinstance(last, int)
    assert data["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    first03 = read_sse(http, s.url, s.body("tasks/resubscribe", {"id": task_id}), {}, limit=1)
    assert first03[0][0] == last
    assert first03[0][1]["result"]["status"]["state"] == "input-required"
    code, _ = s.sigint()
    assert code == 0

    s = serve(*AGENT, "--shutdown-grace", "0")
    answered = s.send1("red", taskId=task_id)
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    missed = [last + 1, last + 2, last + 3]

    replay = read_sse(
        http,
        s.url,
        s.body("SubscribeToTask", {"id": task_id}),
        {**V1, "Last-Event-ID": str(last)},
    )
    assert [seq for seq, _ in replay] == missed, replay
    results = [data["result"] for _, data in replay]
    assert results[0]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert results[1]["artifactUpdate"]["artifact"]["parts"][0]["text"] == "got: red"
    assert results[2]["statusUpdate"]["status"] == s.get1(task_id)["status"]
    assert all(
        r["statusUpdate" if "statusUpdate" in r else "artifactUpdate"]["taskId"] == task_id
        for r in results
    )

    replay03 = read_sse(
        http,
        s.url,
        s.body("tasks/resubscribe", {"id": task_id}),
        {"Last-Event-ID": str(last)},
    )
    assert [seq for seq, _ in replay03] == missed, replay03
    results = [data["result"] for _, data in replay03]
    assert [r["kind"] for r in results] == ["status-update", "artifact-update", "status-update"]
    assert [r.get("final") for r in results[::2]] == [False, True]
    assert results[0]["status"]["state"] == "working"
    assert results[1]["artifact"]["parts"][0]["text"] == "got: red"
    assert results[2]["status"]["state"] == "completed"


# --- 5. a file from a newer a2ad is refused ---


def test_serve_refuses_a_file_with_a_newer_schema_naming_the_file_and_version(db: Path) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE future (x)")
        conn.execute("PRAGMA user_version = 99")
        conn.commit()
    done = run_a2ad("serve", "--port", str(free_port()), "--store", f"sqlite:///{db}")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert str(db) in said
    assert re.search(r"\b99\b", said), said
    assert "Traceback" not in said, said
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (99,)


# --- 6. deadlines, end to end ---


def test_task_timeout_flag_and_timeout_seconds_metadata_fail_overdue_tasks(
    serve: Callable[..., Server],
) -> None:
    s = serve("--task-timeout", "1s", "--shutdown-grace", "0")
    sent = time.monotonic()
    task_id = s.send1("sleep:30 x", immediately=True)["id"]
    failed = s.wait_state(task_id, "TASK_STATE_FAILED", timeout=5)
    assert 0.9 <= time.monotonic() - sent < 3.5
    assert "deadline exceeded" in status_text(failed).lower(), failed
    code, _ = s.sigint()
    assert code == 0

    s = serve("--shutdown-grace", "0")
    unbounded = s.send1("sleep:30 y", immediately=True)["id"]
    sent = time.monotonic()
    bounded = s.send03("sleep:30 z", immediately=True, metadata={"timeoutSeconds": 1})["id"]
    while s.get03(bounded)["status"]["state"] != "failed":
        assert time.monotonic() - sent < 3.5, s.get03(bounded)
        time.sleep(0.05)
    assert time.monotonic() - sent >= 0.9
    assert "deadline exceeded" in status_text(s.get03(bounded)).lower()
    assert s.get1(unbounded)["status"]["state"] == "TASK_STATE_WORKING"


# --- 7. push notifications survive a crash ---


def test_a_delivery_cut_short_by_sigkill_is_made_after_the_restart_and_the_rest_follow(
    serve: Callable[..., Server],
) -> None:
    with Receiver() as receiver:
        receiver.rule("k", hold=True)  # the first delivery hangs until the server is gone
        s = serve(*AGENT, "--allow-private-webhooks", "--shutdown-grace", "0")
        params = {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "chunks 3"}],
            },
            "configuration": {"taskPushNotificationConfig": {"url": receiver.url("k"), "id": "k"}},
        }
        task = s.call("SendMessage", params, v1=True)["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        deadline = time.monotonic() + 10
        while not receiver.received("k"):
            assert time.monotonic() < deadline, "the webhook was never called"
            time.sleep(0.02)
        s.sigkill()
        receiver.release("k")  # its answer goes nowhere: the server that asked is dead
        receiver.rule("k")  # from now on, take everything

        s = serve(*AGENT, "--allow-private-webhooks")

        def finished() -> bool:
            bodies = [r.body for r in receiver.accepted("k")]
            return any(
                b.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
                for b in bodies
            )

        deadline = time.monotonic() + 10
        while not finished():
            assert time.monotonic() < deadline, receiver.received("k")
            time.sleep(0.02)
        got = receiver.received("k")
        last = receiver.accepted("k")[-1].seq
        # The cut delivery was made again (at least once), then every later event in order.
        assert [r.seq for r in got] == [0, *range(last + 1)]
        assert got[1].body == got[0].body and "task" in got[0].body
        config = s.http.post(
            s.url,
            json=s.body("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "k"}),
            headers={**V1, "A2A-Extensions": PUSH_DELIVERY.uri},
        ).json()["result"]
        assert config["a2adDelivery"] == {"pending": 0, "delivered": last + 1, "deadLettered": 0}
