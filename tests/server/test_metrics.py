"""``GET /metrics`` after a scripted run: parsed with prometheus-client's own
parser, its counts must be what the run did. One server (a real uvicorn, a
SQLite file) runs the script; the flag cases each run a real ``a2ad serve``."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from a2ad import Agent, TaskContext, create_app
from a2ad.settings import Observability
from a2ad.store.sqlite import SqliteStore

from ..conftest import LiveServer, msg10
from ..jsonrpc import rpc_body
from ..served import Served
from ..threaded_server import free_port
from .sse_client import frames

V1 = {"A2A-Version": "1.0"}


class Script(Agent):
    name = "script"
    description = "Does what the message's text says."

    async def run(self, ctx: TaskContext) -> None:
        if ctx.text == "fail":
            raise RuntimeError("asked to fail")
        if ctx.text == "ask":
            await ctx.require_input("more?")
            return
        if ctx.text == "hang":
            await ctx.working("hanging")
            await asyncio.sleep(3600)
        await ctx.complete("done")


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name`` over the samples whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[str, Samples]]:
    """The run, done once; the URL and what /metrics said after it."""
    with tempfile.TemporaryDirectory() as folder:
        from a2ad.server.metrics import Metrics

        app = create_app(
            Script(),
            store=SqliteStore(f"{folder}/t.db"),
            observability=Observability(metrics=Metrics()),
        )
        with LiveServer(app) as live:
            yield live.url, asyncio.run(_script(live.url))


async def _script(url: str) -> Samples:
    async with httpx.AsyncClient(base_url=url, headers=V1, timeout=10) as http:

        async def rpc(method: str, params: Any) -> dict[str, Any]:
            r = await http.post("/", json=rpc_body(method, params))
            return r.json()  # type: ignore[no-any-return]

        for text in ("ok", "ok", "fail", "ask"):
            await rpc("SendMessage", msg10(text))
        hung = await rpc(
            "SendMessage", {**msg10("hang"), "configuration": {"returnImmediately": True}}
        )
        task_id = hung["result"]["task"]["id"]
        await rpc("CancelTask", {"id": task_id})
        assert (await rpc("GetTask", {"id": "no-such-task"}))["error"]["code"] == -32001
        assert "result" in await rpc("GetTask", {"id": task_id})
        bad = await http.post("/", content=b"{not json")
        assert bad.json()["error"]["code"] == -32700
        async with http.stream(
            "POST",
            "/",
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "SendStreamingMessage",
                "params": msg10("ok"),
            },
        ) as stream:
            assert [f async for f in frames(stream)]
        r = await http.get("/metrics")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        return parse(r.text)


def test_requests_are_counted_by_method_binding_and_code(scripted: tuple[str, Samples]) -> None:
    _, m = scripted
    sends = value(m, "a2ad_requests_total", method="SendMessage", binding="JSONRPC", code="none")
    assert sends == 5
    assert value(m, "a2ad_requests_total", method="GetTask", binding="JSONRPC", code="-32001") == 1
    assert value(m, "a2ad_requests_total", method="", binding="JSONRPC", code="-32700") == 1
    assert value(m, "a2ad_requests_total", method="CancelTask", binding="JSONRPC", code="none") == 1
    streamed = ("a2ad_requests_total", "SendStreamingMessage")
    assert value(m, streamed[0], method=streamed[1], binding="JSONRPC", code="none") == 1
    assert value(m, "a2ad_requests_total", method="GetTask", binding="JSONRPC", code="none") == 1
    count = "a2ad_request_duration_seconds_count"
    assert value(m, count, method="SendMessage", binding="JSONRPC") == 5
    assert value(m, count, method="GetTask", binding="JSONRPC") == 2  # answered, and refused


def test_transitions_and_durations_match_what_the_tasks_did(
    scripted: tuple[str, Samples],
) -> None:
    _, m = scripted
    created = total(m, "a2ad_task_transitions_total", from_state="none")
    assert created == 6  # five sends and the stream
    ends = {
        to: total(m, "a2ad_task_transitions_total", to_state=to)
        for to in ("completed", "failed", "canceled", "input-required")
    }
    assert ends == {"completed": 3, "failed": 1, "canceled": 1, "input-required": 1}
    assert total(m, "a2ad_task_duration_seconds_count") == 5  # the input-required one goes on
    # Not the one stored at once (returnImmediately): its creation wasn't the agent's.
    assert total(m, "a2ad_task_first_event_seconds_count") == 5
    assert value(m, "a2ad_agent_turns_in_flight", agent="") == 0
    assert total(m, "a2ad_store_operation_seconds_count", operation="create") == 6


def test_tasks_by_state_are_read_from_the_store(scripted: tuple[str, Samples]) -> None:
    _, m = scripted
    assert value(m, "a2ad_tasks", agent="", state="completed") == 3
    assert value(m, "a2ad_tasks", agent="", state="input-required") == 1
    assert value(m, "a2ad_tasks", agent="", state="canceled") == 1
    assert value(m, "a2ad_push_outbox_deliveries") == 0


def test_the_scrape_itself_is_in_flight_and_no_stream_is_left_open(
    scripted: tuple[str, Samples],
) -> None:
    _, m = scripted
    assert value(m, "a2ad_requests_in_flight") == 1
    assert total(m, "a2ad_streams_open") == 0
    assert value(m, "a2ad_subscribers") == 0


# --- the flags, on a real a2ad serve ---


def test_no_metrics_makes_metrics_a_404(tmp_path: Path) -> None:
    with Served("--no-metrics", "--store", f"sqlite:///{tmp_path}/t.db") as served:
        served.expect(r"Press Ctrl-C to stop", 30)
        assert httpx.get(served.url + "/metrics").status_code == 404


def test_metrics_port_serves_it_there_and_not_on_the_main_port(tmp_path: Path) -> None:
    port = free_port()
    store = f"sqlite:///{tmp_path}/t.db"
    with Served("--metrics-port", str(port), "--store", store) as served:
        served.expect(r"Press Ctrl-C to stop", 30)
        assert httpx.get(served.url + "/metrics").status_code == 404
        r = httpx.get(f"http://127.0.0.1:{port}/metrics")
        assert r.status_code == 200
        assert "a2ad_requests_total" in r.text


def test_with_auth_metrics_needs_an_operator(tmp_path: Path) -> None:
    from a2ad.server.auth import add_key

    keys = tmp_path / "keys.toml"
    operator = add_key(str(keys), "ops", roles=["operator"])
    user = add_key(str(keys), "alice")
    with Served("--auth", str(keys), "--store", f"sqlite:///{tmp_path}/t.db") as served:
        served.expect(r"Press Ctrl-C to stop", 30)
        url = served.url + "/metrics"
        refused = httpx.get(url)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == -32007 or refused.json()["error"]
        denied = httpx.get(url, headers={"Authorization": f"Bearer {user}"})
        assert denied.status_code == 403
        assert denied.json()["error"]["status"] == "PERMISSION_DENIED"
        allowed = httpx.get(url, headers={"Authorization": f"Bearer {operator}"})
        assert allowed.status_code == 200
        assert "a2ad_tasks" in allowed.text


def test_the_memory_store_counts_transitions_but_times_no_store_call() -> None:
    from a2ad.server.metrics import Metrics

    app = create_app(Script(), observability=Observability(metrics=Metrics()))
    with LiveServer(app) as live, httpx.Client(base_url=live.url, headers=V1) as http:
        assert "result" in http.post("/", json=rpc_body("SendMessage", msg10("ok"))).json()
        m = parse(http.get("/metrics").text)
    assert total(m, "a2ad_task_transitions_total", to_state="completed") == 1
    assert total(m, "a2ad_task_duration_seconds_count") == 1
    assert not [name for name, _ in m if name.startswith("a2ad_store_operation_seconds")]
