"""Binding equivalence (A2A 1.0 §5.1): one scenario, run through JSON-RPC and
HTTP+JSON and gRPC, each in 1.0 and in 0.3, gives the same tasks, states,
events and errors.

Each binding is a small client (http_binding.py, grpc_binding.py) that reads
every answer through the oracle of its wire (parse_v1 for 1.0 JSON, the 0.3
JSON Schema for 0.3 JSON-RPC, the 0.3 proto for 0.3 HTTP+JSON, the official
SDK's protobuf types for gRPC) and reduces it to a plain summary that names
nothing binding-specific (summaries.py): a task is its state, artifacts and
history; an error is its ErrorInfo reason (over gRPC, with the status code the
spec's table gives it). Each test runs its scenario through the six and
compares the summaries with each other and with what the scenario must give.

One server answers all six: uvicorn for HTTP, and a gRPC listener in its loop
(grpc_beside), as ``a2ad serve --grpc-port`` runs them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc.aio
import httpx
import pytest

from a2ad import create_app

from ..conftest import LiveServer, wait_for
from ..scripted import ScriptedAgent
from .grpc_binding import GrpcBinding, GrpcBinding03, grpc_beside
from .http_binding import HttpBinding
from .summaries import BindingClient, Failed, Summary

TIMEOUT = 10


@pytest.fixture(scope="module")
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def server(agent: ScriptedAgent) -> Iterator[tuple[LiveServer, str]]:
    """The live server, and the address of its gRPC listener."""
    with LiveServer(create_app(agent)) as live, grpc_beside(live) as address:
        yield live, address


@pytest.fixture
async def bindings(server: tuple[LiveServer, str]) -> AsyncIterator[list[BindingClient]]:
    live, address = server
    async with (
        httpx.AsyncClient(base_url=live.url, timeout=TIMEOUT) as http,
        grpc.aio.insecure_channel(address) as channel,
    ):
        # A2A 0.3's gRPC service (a2a.v1.A2AService) on the same channel: its answers
        # as ProtoJSON are the 0.3 proto's JSON, which the summaries read for 0.3
        # HTTP+JSON.
        yield [
            *(HttpBinding(rest, v, http) for rest in (False, True) for v in ("1.0", "0.3")),
            GrpcBinding(channel),
            GrpcBinding03(channel),
        ]


def same(results: dict[str, Summary], expected: Summary) -> None:
    """Every binding's summary is ``expected``; a failure shows them side by side."""
    differing = {name: r for name, r in results.items() if r != expected}
    assert not differing, f"expected {expected!r}\nbut got {differing!r}"


def without_ids(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "id"}


ON_IT = ("agent", [("text", "on it")])


# --- scenarios ----------------------------------------------------------------


async def test_send_gives_the_same_completed_task(bindings: list[BindingClient]) -> None:
    results = {b.name: without_ids(await b.send("echo same")) for b in bindings}
    same(
        results,
        {
            "state": "completed",
            "status": None,
            "artifacts": [("echo", [("text", "same")])],
            "history": [("user", [("text", "echo same")]), ON_IT],
        },
    )


async def test_a_reply_is_the_same_message(bindings: list[BindingClient]) -> None:
    same(
        {b.name: await b.send("reply yes") for b in bindings},
        ("message", ("agent", [("text", "yes")])),
    )


async def test_every_part_kind_arrives_the_same(bindings: list[BindingClient]) -> None:
    results = {b.name: without_ids(await b.send("parts"))["artifacts"] for b in bindings}
    same(
        results,
        [
            ("text", [("text", "plain text")]),
            ("data", [("data", {"n": 1, "xs": [1, 2]})]),
            ("raw", [("file", "b.bin", "application/octet-stream", b"\x00\x01bytes")]),
            ("url", [("file", "f.pdf", "application/pdf", "https://example.com/f.pdf")]),
            ("multi", [("text", "a"), ("text", "b")]),
        ],
    )


async def test_a_stream_gives_the_same_events(bindings: list[BindingClient]) -> None:
    same(
        {b.name: await b.stream("chunks 2") for b in bindings},
        [
            ("task", "submitted"),
            ("status", "working"),
            ("artifact", [("text", "c0")]),
            ("artifact", [("text", "c1")]),
            ("status", "completed"),
        ],
    )


async def test_get_with_history_length_gives_the_same_history(
    bindings: list[BindingClient],
) -> None:
    results = {}
    for b in bindings:
        task = await b.send("echo h")
        # The 0.3 proto's history_length has no presence: 0 there is "not set".
        lengths = (0, 1, 2) if getattr(b, "asks_no_history", True) else (1, 2)
        results[b.name] = [(await b.get(task["id"], historyLength=n))["history"] for n in lengths]
    whole = [("user", [("text", "echo h")]), ON_IT]
    same({k: v[-2:] for k, v in results.items()}, [[ON_IT], whole])
    same({k: v[0] for k, v in results.items() if len(v) == 3}, [])


def listing(bindings: list[BindingClient]) -> list[BindingClient]:
    """The bindings with a ListTasks (all but 0.3's gRPC service)."""
    return [b for b in bindings if getattr(b, "lists", True)]


async def test_list_with_filters_gives_the_same_page(bindings: list[BindingClient]) -> None:
    results = {}
    for b in listing(bindings):
        context = f"ctx-{uuid.uuid4()}"
        for text in ("echo 1", "echo 2", "echo 3", "fail"):
            await b.send(text, context_id=context)
        results[b.name] = (
            await b.list(contextId=context, status="TASK_STATE_COMPLETED", pageSize=2),
            await b.list(
                contextId=context, status="failed", historyLength=0, includeArtifacts=True
            ),
        )
    (first, failed) = next(iter(results.values()))
    same(results, (first, failed))
    assert first["totalSize"] == 3 and first["pageSize"] == 2 and first["more"]
    assert [t["state"] for t in first["tasks"]] == ["completed", "completed"]
    assert all(t["artifacts"] == [] for t in first["tasks"])  # includeArtifacts defaults false
    assert failed == {
        "tasks": [
            {
                "state": "failed",
                "status": ("agent", [("text", "it broke")]),
                "artifacts": [],
                "history": [],
            }
        ],
        "totalSize": 1,
        "pageSize": 50,
        "more": False,
    }


async def test_cancel_and_its_errors_are_the_same(
    bindings: list[BindingClient], agent: ScriptedAgent
) -> None:
    results = {}
    for b in bindings:
        task = await b.send("hang", immediately=True)
        await wait_for(lambda: task["id"] in agent.started)  # noqa: B023
        canceled = await b.cancel(task["id"])
        results[b.name] = (
            canceled["state"],
            await b.cancel(task["id"]),
            await b.cancel(f"missing-{uuid.uuid4()}"),
        )
    same(results, ("canceled", Failed("TASK_NOT_CANCELABLE"), Failed("TASK_NOT_FOUND")))


async def test_subscribe_gives_the_same_events_and_errors(
    bindings: list[BindingClient], agent: ScriptedAgent
) -> None:
    results = {}
    for b in bindings:
        done = await b.send("chunks 2")
        replayed = await b.subscribe(done["id"], last_event_id=1)  # after "working"
        finished = await b.subscribe(done["id"])
        results[b.name] = (replayed, finished, await b.subscribe(f"missing-{uuid.uuid4()}"))
    same(
        results,
        (
            [
                ("artifact", [("text", "c0")]),
                ("artifact", [("text", "c1")]),
                ("status", "completed"),
            ],
            Failed("UNSUPPORTED_OPERATION"),
            Failed("TASK_NOT_FOUND"),
        ),
    )


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("get-unknown", "TASK_NOT_FOUND"),
        ("negative-history", "INVALID_PARAMS"),
        ("bad-status-filter", "INVALID_PARAMS"),
        ("message-to-a-finished-task", "UNSUPPORTED_OPERATION"),
        ("message-to-an-unknown-task", "TASK_NOT_FOUND"),
    ],
)
async def test_errors_are_the_same(
    bindings: list[BindingClient], scenario: str, reason: str
) -> None:
    results = {}
    for b in listing(bindings) if scenario == "bad-status-filter" else bindings:
        if scenario == "get-unknown":
            results[b.name] = await b.get(f"missing-{uuid.uuid4()}")
        elif scenario == "negative-history":
            task = await b.send("echo n")
            results[b.name] = await b.get(task["id"], historyLength=-1)
        elif scenario == "bad-status-filter":
            results[b.name] = await b.list(status="sleeping")
        elif scenario == "message-to-a-finished-task":
            task = await b.send("echo first")
            results[b.name] = await b.send("echo again", task_id=task["id"])
        else:
            results[b.name] = await b.send("echo lost", task_id=f"missing-{uuid.uuid4()}")
    same(results, Failed(reason))
