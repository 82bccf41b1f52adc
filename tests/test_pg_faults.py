"""PostgreSQL faults, end to end: real ``a2ad serve`` processes on a fresh
schema. One reaches PostgreSQL through a TCP proxy the test cuts (a real outage
for it, while the database goes on serving everyone else); its connections,
found by the ``application_name`` its store URL gives them, are also ended
with ``pg_terminate_backend`` under load. A second instance, on the same
schema directly, gets the same messages at the same time."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import V1
from .jsonrpc import rpc_body
from .postgres import fresh_schema_sync
from .served import Served
from .tcp_proxy import TcpProxy

asyncpg = pytest.importorskip("asyncpg")

# echo's "sleep:<s> <text>", and the scripted agent's "input <question>" (tests/scripted.py)
AGENT = ("--agent", "tests.test_durability:DurableAgent")
UNAVAILABLE = "TASK_STORE_UNAVAILABLE"
STORE_LOST = "lost its task store"  # a stranded task's status message (engine/stranded.py)
OUTAGE_BEGINS = "the task store is unavailable:"  # the store's log line (store/outage.py)
OUTAGE_ENDS = "the task store answers again after"


class Instance:
    """One ``a2ad serve`` and JSON-RPC 1.0 calls to it."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.base = served.url
        self.http = httpx.Client(timeout=20)

    def rpc(self, method: str, params: Any, *, v1: bool = True) -> tuple[int, dict[str, Any]]:
        body = rpc_body(method, params)
        r = self.http.post(f"{self.base}/", json=body, headers=V1 if v1 else {})
        assert "Traceback" not in r.text, r.text
        return r.status_code, r.json()

    def send(self, text: str, *, immediately: bool = False, **message: Any) -> dict[str, Any]:
        """SendMessage, which must succeed; the task."""
        status, body = self.rpc("SendMessage", send_params(text, immediately, **message))
        assert status == 200 and "result" in body, body
        return body["result"]["task"]  # type: ignore[no-any-return]

    def get(self, task_id: str) -> dict[str, Any]:
        status, body = self.rpc("GetTask", {"id": task_id})
        assert status == 200 and "result" in body, body
        return body["result"]  # type: ignore[no-any-return]

    def wait_state(self, task_id: str, state: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            task = self.get(task_id)
            if task["status"]["state"] == state:
                return task
            assert time.monotonic() < deadline, f"task {task_id} never became {state}: {task}"
            time.sleep(0.1)


def send_params(text: str, immediately: bool = False, **message: Any) -> dict[str, Any]:
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
    return params


def assert_unavailable(body: dict[str, Any], task_id: str | None = None) -> None:
    """``body`` is the JSON-RPC error that says the task store is unavailable."""
    error = body["error"]
    assert error["code"] == -32603, body
    info = error["data"][0]
    assert info["reason"] == UNAVAILABLE, body
    assert "task store is unavailable" in error["message"], body
    if task_id is not None:
        assert task_id in error["message"] and info["metadata"] == {"taskId": task_id}, body


def status_text(task: dict[str, Any]) -> str:
    message = task["status"].get("message") or {}
    return " ".join(part.get("text", "") for part in message.get("parts", []))


class Admin:
    """A direct connection to the test schema, for what the tests check below a2ad."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(url))

    def fetch(self, query: str, *args: Any) -> list[Any]:
        return list(self.loop.run_until_complete(self.conn.fetch(query, *args)))

    def terminate(self, application_name: str) -> int:
        """pg_terminate_backend on every connection so named; how many."""
        return int(
            self.loop.run_until_complete(
                self.conn.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = $1",
                    application_name,
                )
            )
        )

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with fresh_schema_sync() as url:
        yield url


@pytest.fixture(scope="module")
def admin(database: str) -> Iterator[Admin]:
    made = Admin(database)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def proxy() -> Iterator[TcpProxy]:
    made = TcpProxy(("127.0.0.1", 5432))
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pg-faults") / "secret.key"


@pytest.fixture(scope="module")
def app_name() -> str:
    return f"a2ad-faults-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def proxied(database: str, proxy: TcpProxy, key_file: Path, app_name: str) -> Iterator[Instance]:
    """The instance behind the proxy; its connections named ``app_name``."""
    store = (
        f"{proxy.url(database)}&application_name={app_name}"
        "&pool_min=2&pool_max=4&connect_timeout=1&command_timeout=5"
    )
    with Served(
        "--store", store, "--secret-key-file", str(key_file), "--shutdown-grace", "0", *AGENT
    ) as served:
        instance = Instance(served)
        yield instance
        instance.http.close()


@pytest.fixture(scope="module")
def direct(database: str, key_file: Path) -> Iterator[Instance]:
    """A second instance on the same schema, straight to PostgreSQL."""
    with Served(
        "--store",
        f"{database}&pool_max=4",
        "--secret-key-file",
        str(key_file),
        "--shutdown-grace",
        "0",
        *AGENT,
    ) as served:
        instance = Instance(served)
        yield instance
        instance.http.close()


def test_while_postgresql_is_out_of_reach_every_request_says_so_then_it_serves_again(
    proxied: Instance, proxy: TcpProxy
) -> None:
    slow = proxied.send("sleep:1.5 finished while the store was away", immediately=True)
    task_id = slow["id"]
    began = time.monotonic()
    proxy.cut()
    try:
        answers = {
            "SendMessage": proxied.rpc("SendMessage", send_params("hello")),
            "GetTask": proxied.rpc("GetTask", {"id": task_id}),
            "ListTasks": proxied.rpc("ListTasks", {}),
            "CancelTask": proxied.rpc("CancelTask", {"id": task_id}),
            "SendStreamingMessage": proxied.rpc("SendStreamingMessage", send_params("hi")),
            "SubscribeToTask": proxied.rpc("SubscribeToTask", {"id": task_id}),
            "tasks/get": proxied.rpc("tasks/get", {"id": task_id}, v1=False),
        }
        for method, (status, body) in answers.items():
            assert status == 200, (method, body)
            assert_unavailable(body)
        for method in ("GetTask", "CancelTask", "SubscribeToTask", "tasks/get"):
            assert_unavailable(answers[method][1], task_id)
        rest = proxied.http.get(f"{proxied.base}/tasks/{task_id}", headers=V1)
        assert rest.status_code == 503, rest.text
        error = rest.json()["error"]
        assert (error["code"], error["status"]) == (503, "UNAVAILABLE")
        assert error["details"][0]["reason"] == UNAVAILABLE
        assert error["details"][0]["metadata"] == {"taskId": task_id}
        assert time.monotonic() - began < 5  # every answer at once, none after a timeout
        time.sleep(max(0.0, 2.0 - (time.monotonic() - began)))  # the slow agent ends meanwhile
    finally:
        proxy.restore()
    # The same process serves again, and fails the task whose last write was lost.
    done = proxied.send("back again")
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    failed = proxied.wait_state(task_id, "TASK_STATE_FAILED", timeout=5)
    assert STORE_LOST in status_text(failed)
    said = proxied.served.output
    assert said.count(OUTAGE_BEGINS) == 1 and said.count(OUTAGE_ENDS) == 1, said
    assert "Exception in ASGI application" not in said
    assert "push: reading the outbox failed" not in said  # it waited the outage out quietly
    assert "Failed to restore the pool connection floor" not in said
    assert proxied.served.proc.poll() is None


def test_connections_ended_under_load_answer_unavailable_or_succeed_and_nothing_is_half_written(
    proxied: Instance, admin: Admin, app_name: str
) -> None:
    answers: list[tuple[int, str]] = []
    stop = threading.Event()

    def sender(n: int) -> None:
        with httpx.Client(timeout=20) as http:
            i = 0
            while not stop.is_set():
                i += 1
                body = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "SendMessage",
                    "params": send_params(f"load {n}.{i}"),
                }
                r = http.post(f"{proxied.base}/", json=body, headers=V1)
                answers.append((r.status_code, r.text))

    outages_before = proxied.served.output.count(OUTAGE_BEGINS)
    senders = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for thread in senders:
        thread.start()
    killed = 0
    try:
        for _ in range(10):  # each round once a few requests were answered since the last
            seen, deadline = len(answers), time.monotonic() + 15
            while len(answers) < seen + 4:
                assert time.monotonic() < deadline, "the load stopped"
                time.sleep(0.05)
            killed += admin.terminate(app_name)
    finally:
        stop.set()
        for thread in senders:
            thread.join(30)
    assert killed >= 10  # every round found connections of the server's to end

    failed = 0
    for status, text in answers:
        assert status == 200 and "Traceback" not in text, text
        body = json.loads(text)
        if "error" in body:
            assert_unavailable(body)
            failed += 1
        else:
            assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", body
    assert len(answers) - failed >= 10, (len(answers), failed)

    # It serves again at once, without a restart.
    assert proxied.send("after the storm")["status"]["state"] == "TASK_STATE_COMPLETED"
    # An outage line per burst at most, not one per failed request.
    outages = proxied.served.output.count(OUTAGE_BEGINS) - outages_before
    assert outages <= 10, proxied.served.output
    assert "Exception in ASGI application" not in proxied.served.output

    # Every stored task is whole: its message, a lawful end, its events all logged.
    deadline = time.monotonic() + 5
    while admin.fetch(
        "SELECT id FROM tasks WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')"
    ):
        assert time.monotonic() < deadline, "tasks left in flight"
        time.sleep(0.2)
    rows = admin.fetch(
        """SELECT t.id, t.state, t.seq, t.body, array_agg(e.seq ORDER BY e.seq) FILTER
            (WHERE e.seq IS NOT NULL) FROM tasks t LEFT JOIN events e ON e.task_id = t.id
            GROUP BY t.id"""
    )
    assert len(rows) >= len(answers) - failed
    for task_id, state, seq, body, logged in rows:
        task = json.loads(body)
        assert task["id"] == task_id and task["status"]["state"] == state
        first = task["history"][0]
        assert first["role"] == "ROLE_USER" and first["parts"][0]["text"], task
        assert list(logged or []) == list(range(1, seq + 1)), (task_id, seq, logged)
        if state == "TASK_STATE_COMPLETED":
            sent = first["parts"][0]["text"]
            echoed = task["artifacts"][0]["parts"][0]["text"]
            assert sent.endswith(echoed) or echoed.startswith("got: "), task
        else:
            assert state == "TASK_STATE_FAILED" and STORE_LOST in status_text(task), task


@pytest.mark.parametrize("immediately", [False, True])
def test_the_same_message_sent_to_two_instances_at_once_makes_one_task(
    proxied: Instance, direct: Instance, admin: Admin, immediately: bool
) -> None:
    tag = uuid.uuid4().hex[:8]
    for round_ in range(8):
        params = send_params(f"twice {tag} {round_}", immediately)
        with ThreadPoolExecutor(2) as pool:
            sent = [pool.submit(i.rpc, "SendMessage", params) for i in (proxied, direct)]
            got = [future.result(30) for future in sent]
        tasks = [
            body["result"]["task"] for status, body in got if status == 200 and "result" in body
        ]
        assert len(tasks) == 2, got
        assert tasks[0]["id"] == tasks[1]["id"], tasks
        if not immediately:
            assert {t["status"]["state"] for t in tasks} == {"TASK_STATE_COMPLETED"}
    stored = admin.fetch(
        "SELECT count(*) FROM tasks WHERE convert_from(body, 'UTF8') LIKE $1", f"%twice {tag}%"
    )
    assert stored[0][0] == 8


def test_the_same_follow_up_sent_to_two_instances_at_once_is_taken_once(
    proxied: Instance, direct: Instance
) -> None:
    for round_ in range(8):
        asked = proxied.send(f"input which one? {round_}")
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        params = send_params(
            f"this one {round_}", True, taskId=asked["id"], contextId=asked["contextId"]
        )
        with ThreadPoolExecutor(2) as pool:
            sent = [pool.submit(i.rpc, "SendMessage", params) for i in (proxied, direct)]
            got = [future.result(30) for future in sent]
        # Neither is told the task is busy: the one that came second is answered
        # as a message sent again.
        assert all(status == 200 and "result" in body for status, body in got), got
        assert {body["result"]["task"]["id"] for _, body in got} == {asked["id"]}
        done = direct.wait_state(asked["id"], "TASK_STATE_COMPLETED", timeout=5)
        answers = [m for m in done["history"] if m["parts"][0].get("text") == f"this one {round_}"]
        assert len(answers) == 1, done["history"]


def test_a_stream_the_outage_cuts_short_ends_with_the_error_and_where_to_resume(
    database: str,
) -> None:
    from a2ad import AppSettings, assemble
    from a2ad.settings import PushSettings
    from a2ad.store.postgres import PostgresStore

    from .conftest import LiveServer
    from .scripted import ScriptedAgent

    cut = TcpProxy(("127.0.0.1", 5432))
    store = PostgresStore(cut.url(database) + "&connect_timeout=1", pool_min=1, pool_max=2)
    settings = AppSettings(keepalive_seconds=0.3, push=PushSettings(secret_key=bytes(32)))
    app = assemble(ScriptedAgent(), settings, store=store)
    try:
        with (
            LiveServer(app) as live,
            httpx.Client(timeout=10) as http,
        ):
            params = send_params("hang", True)
            r = http.post(f"{live.url}/", json=rpc_body("SendMessage", params), headers=V1)
            task_id = r.json()["result"]["task"]["id"]
            # Working before the stream opens: its first frame is then the last until the cut.
            deadline = time.monotonic() + 10
            while True:
                got = http.post(
                    f"{live.url}/", json=rpc_body("GetTask", {"id": task_id}), headers=V1
                ).json()
                if got["result"]["status"]["state"] == "TASK_STATE_WORKING":
                    break
                assert time.monotonic() < deadline, got
                time.sleep(0.02)
            frames: list[tuple[int | None, dict[str, Any]]] = []
            body = rpc_body("SubscribeToTask", {"id": task_id})
            with http.stream("POST", f"{live.url}/", json=body, headers=V1) as stream:
                event_id: int | None = None
                for line in stream.iter_lines():
                    if line.startswith("id:"):
                        event_id = int(line[3:])
                    elif line.startswith("data:"):
                        frames.append((event_id, json.loads(line[5:])))
                        event_id = None
                        if len(frames) == 1:
                            cut.cut()  # the quiet stream's next look at the store fails
            cut.restore()
    finally:
        cut.close()
    (first_id, first), (last_id, last) = frames
    assert first["result"]["task"]["id"] == task_id and last_id is None
    error = last["error"]
    assert error["code"] == -32603 and error["data"][0]["reason"] == UNAVAILABLE
    assert error["data"][0]["metadata"] == {"taskId": task_id, "lastEventId": str(first_id)}
    assert "task store became unavailable" in error["message"]
    assert f"Last-Event-ID: {first_id}" in error["message"]
