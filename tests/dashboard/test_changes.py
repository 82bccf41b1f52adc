"""``GET /a2ad/changes`` (server/reads/changes.py): the SSE stream of the caller's
tasks as they change, which the dashboard redraws on. On a real port, with API
keys: a caller hears of its own tasks only."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import ApiKeys, CredentialAuthenticator, create_app
from a2ad.server.limits import Limits
from a2ad.store.sqlite import SqliteStore

from ..conftest import LiveServer
from ..scripted import ScriptedAgent
from .wire import send

V1 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, str]) -> Iterator[LiveServer]:
    store = SqliteStore(str(tmp_path_factory.mktemp("changes") / "tasks.db"))
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(keys["path"]))
    with LiveServer(create_app(ScriptedAgent(), store=store, authenticator=authenticator)) as live:
        yield live


class Listener:
    """Reads the changes stream in a thread, keeping every task it reports."""

    def __init__(self, server: LiveServer, key: str) -> None:
        self.seen: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.opened = threading.Event()
        self.client = httpx.Client(timeout=30)
        self.url = f"{server.url}/a2ad/changes"
        self.headers = {"Authorization": f"Bearer {key}"}
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.opened.wait(10)

    def _read(self) -> None:
        try:
            with self.client.stream("GET", self.url, headers=self.headers) as response:
                assert response.headers["content-type"] == "text/event-stream"
                self.opened.set()
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        with self.changed:
                            self.seen.extend(json.loads(line[6:])["tasks"])
                            self.changed.notify_all()
        except httpx.HTTPError:
            pass

    def wait_for(self, task_id: str, state: str, timeout: float = 3.0) -> None:
        with self.changed:
            met = self.changed.wait_for(
                lambda: any(t["id"] == task_id and t["state"] == state for t in self.seen),
                timeout,
            )
        assert met, f"no change of {task_id} to {state} in {timeout} s: {self.seen}"

    def close(self) -> None:
        self.client.close()


def test_a_caller_hears_of_its_own_tasks_changing_and_of_no_one_elses(
    server: LiveServer, keys: dict[str, str]
) -> None:
    ann = Listener(server, keys["ann"])
    try:
        hers = send(server, "hang for ann", key=keys["ann"], wait=False)
        ann.wait_for(hers["id"], "TASK_STATE_WORKING")
        theirs = send(server, "echo for bob", key=keys["bob"], wait=False)
        headers = {**V1, "Authorization": f"Bearer {keys['ann']}"}
        httpx.post(f"{server.url}/tasks/{hers['id']}:cancel", json={}, headers=headers)
        ann.wait_for(hers["id"], "TASK_STATE_CANCELED")
        assert all(t["id"] != theirs["id"] for t in ann.seen)
        assert {"id", "contextId", "state", "timestamp"} <= set(ann.seen[-1])
    finally:
        ann.close()


def test_the_stream_needs_a_credential_and_takes_get_only(server: LiveServer) -> None:
    refused = httpx.get(f"{server.url}/a2ad/changes")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"]


def test_the_stream_is_answered_under_each_agents_path(tmp_path: Path) -> None:
    app = create_app({"one": ScriptedAgent(), "two": ScriptedAgent()})
    with LiveServer(app) as live:
        posted = httpx.post(f"{live.url}/agents/two/a2ad/changes")
        assert posted.status_code == 405
        with httpx.stream("GET", f"{live.url}/agents/two/a2ad/changes", timeout=10) as opened:
            assert opened.status_code == 200
            assert next(opened.iter_lines()) == ": a2ad changes"


def test_a_timeline_is_its_callers_alone(server: LiveServer, keys: dict[str, str]) -> None:
    hers = send(server, "echo timeline", key=keys["ann"], wait=False)
    ann = {"Authorization": f"Bearer {keys['ann']}"}
    bob = {"Authorization": f"Bearer {keys['bob']}"}
    url = f"{server.url}/a2ad/tasks/{hers['id']}/timeline"
    for _ in range(100):
        timeline = httpx.get(url, headers=ann).json()
        if timeline["events"] and timeline["events"][-1]["state"] == "TASK_STATE_COMPLETED":
            break
        time.sleep(0.02)
    assert [e["seq"] for e in timeline["events"]] == sorted(e["seq"] for e in timeline["events"])
    assert timeline["events"][-1]["state"] == "TASK_STATE_COMPLETED"
    assert timeline["artifactUpdates"] >= 1
    other = httpx.get(url, headers=bob)
    missing = httpx.get(f"{server.url}/a2ad/tasks/no-such-task/timeline", headers=bob)
    assert other.status_code == missing.status_code == 404
    assert other.json()["error"]["status"] == missing.json()["error"]["status"]


def test_activity_counts_the_callers_recent_tasks(server: LiveServer, keys: dict[str, str]) -> None:
    cat = {"Authorization": f"Bearer {keys['cat']}"}
    sent = [
        send(server, t, key=keys["cat"], wait=False)
        for t in ("echo a", "echo b", "echo c", "fail d", "hang")
    ]
    send(server, "echo not cat's", key=keys["bob"], wait=False)
    url = f"{server.url}/a2ad/activity?minutes=5"
    for _ in range(100):
        activity = httpx.get(url, headers=cat).json()
        if activity["finished"] == 4:
            break
        time.sleep(0.02)
    assert (activity["changed"], activity["finished"], activity["sampled"]) == (5, 4, False)
    assert activity["minutes"] == 5 and len(activity["buckets"]) == 12
    totals: dict[str, int] = {}
    for bucket in activity["buckets"]:
        for state, n in bucket["counts"].items():
            totals[state] = totals.get(state, 0) + n
    assert totals == {
        "TASK_STATE_COMPLETED": 3,
        "TASK_STATE_FAILED": 1,
        "TASK_STATE_WORKING": 1,
    }
    durations = activity["durations"]
    assert durations["count"] == 4
    assert sum(b["count"] for b in durations["bins"]) == 4
    assert 0 <= durations["p50"] <= durations["max"] < 60
    assert len(sent) == 5
    for odd in ("0", "%C2%B2", "61.5", "1441"):  # "²" is a digit to str.isdigit
        bad = httpx.get(f"{server.url}/a2ad/activity?minutes={odd}", headers=cat)
        assert bad.status_code == 400, odd
        assert "minutes" in bad.json()["error"]["message"]


def test_a_changes_stream_counts_with_the_callers_streams(tmp_path: Path) -> None:
    app = create_app(ScriptedAgent(), limits=Limits(max_streams_per_principal=1))
    with LiveServer(app) as live, httpx.Client(timeout=10) as http:
        with http.stream("GET", f"{live.url}/a2ad/changes") as first:
            assert first.status_code == 200
            second = http.get(f"{live.url}/a2ad/changes")
            assert second.status_code == 429
            assert second.json()["error"]["details"][0]["reason"] == "QUOTA_EXCEEDED"
        again = http.get(f"{live.url}/healthz")  # the first's slot is given back on close
        assert again.status_code == 200
